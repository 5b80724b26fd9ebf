// The trace of a program that ended before the end of its run (SIGKILL, or
// a crash its own signal handler took): its records are in the journal
// beside its trace (observers/trace/journal.h), rendered here into the
// trace once the program is gone.
#pragma once

#include <string>

namespace verbfault::cli {

// Renders `trace`.journal into `trace` and removes it, saying so on
// stderr; nothing when there is no journal (the program wrote its trace).
// `who`: the program, as the message names it ("the program", "process 1").
void recover_journal(const std::string& trace, const std::string& who = "the program");

}  // namespace verbfault::cli

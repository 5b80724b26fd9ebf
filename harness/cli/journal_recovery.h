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
// A program that ended with the trace's write-error status (125) said
// why itself: its journal is kept as it is, without a second line.
// Returns false, having said why in one line, when the trace cannot be
// written: the run's status is then 125 (a run without its trace is no
// result).
bool recover_journal(const std::string& trace, int status, const std::string& who = "the program");

}  // namespace verbfault::cli

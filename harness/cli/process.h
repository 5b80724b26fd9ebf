// The exit statuses of `verbfault` and how a program's status reads. The
// program under test is run by process_group.h: fork + exec with extra
// environment, address-space randomization off (so that pointers an
// application uses as wr_id replay identically), its status passed through.
#pragma once

#include "verbfault/exit_status.h"

#include <string>

namespace verbfault::cli {

// A program's exit status as verbfault passes it on (128 + N: it died of
// signal N), for people: "exit 3", or "signal SEGV".
std::string describe_status(int status);

}  // namespace verbfault::cli

// The exit statuses of `verbfault` and how a program's status reads. The
// program under test is run by process_group.h: fork + exec with extra
// environment, address-space randomization off (so that pointers an
// application uses as wr_id replay identically), its status passed through.
#pragma once

#include <string>

namespace verbfault::cli {

// Exit statuses of `verbfault` itself (besides the program's own).
inline constexpr int kExitFindings = 121;  // the program passed; the checks did not
inline constexpr int kExitHang = 122;      // the checks ended a program that could never progress
inline constexpr int kExitNondeterministic = 124;  // --check-determinism: traces differ
inline constexpr int kExitUsage = 125;             // bad option, plan, seed or environment
inline constexpr int kExitCannotExecute = 126;     // the command exists but cannot run
inline constexpr int kExitNotFound = 127;          // the command was not found

// A program's exit status as verbfault passes it on (128 + N: it died of
// signal N), for people: "exit 3", or "signal SEGV".
std::string describe_status(int status);

}  // namespace verbfault::cli

// Running the program under test: fork + exec with extra environment,
// address-space randomization off (so that pointers an application uses as
// wr_id replay identically), the exit status passed through.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace verbfault::cli {

// Exit statuses of `verbfault` itself (besides the program's own).
inline constexpr int kExitFindings = 121;  // the program passed; the checks did not
inline constexpr int kExitHang = 122;      // the checks ended a program that could never progress
inline constexpr int kExitNondeterministic = 124;  // --check-determinism: traces differ
inline constexpr int kExitUsage = 125;             // bad option, plan, seed or environment
inline constexpr int kExitCannotExecute = 126;     // the command exists but cannot run
inline constexpr int kExitNotFound = 127;          // the command was not found

// Runs argv with `environment` added to (and overriding) the current one.
// Returns the program's exit status, 128 + N when it died of signal N, or
// kExitNotFound / kExitCannotExecute when exec failed.
int run_program(const std::vector<std::string>& argv,
                const std::map<std::string, std::string>& environment);

}  // namespace verbfault::cli

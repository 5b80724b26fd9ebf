// The exit statuses verbfault gives a run, besides the program's own: one
// table, read by libverbfault.so in the program's process and by the
// `verbfault` command (docs/cli.md's table of exit statuses). A CI job tells
// them apart from a program's failure by these numbers; 123 is left unused,
// as xargs(1) gives it a meaning of its own.
#pragma once

namespace verbfault::exit_status {

inline constexpr int kFindings = 121;  // the program passed; the runtime checks did not
inline constexpr int kHang = 122;      // the checks ended a program that could never progress
inline constexpr int kNondeterministic = 124;  // --check-determinism: the traces differ
// Not a run: a bad option, plan, seed or environment variable, or a trace
// that could not be written.
inline constexpr int kUsage = 125;
inline constexpr int kCannotExecute = 126;  // the command exists but cannot run
inline constexpr int kNotFound = 127;       // the command was not found

}  // namespace verbfault::exit_status

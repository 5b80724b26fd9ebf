// One seed's run of a program under `verbfault run`, as a child process
// with its output and trace in files, and what it came to: the oracle that
// sweep, minimize and replay share. A run fails when the program exits
// with a status that is not a pass (by default anything but 0), a runtime
// check reports a finding that fails runs (a leak at exit does not), the harness ends a hang (122),
// the program dies of a signal, or the wall-clock timeout kills it.
#pragma once

#include "replay.h"
#include "verbfault/plan.h"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace verbfault::cli {

// What one run is: everything `verbfault run` is given.
struct SeedRun {
  std::uint64_t seed = 0;
  std::optional<std::string> plan_file;  // passed as --plan
  std::vector<std::string> faults;       // passed as --fault, after the file's rules
  std::optional<std::string> threads;    // --threads
  // Settings of the environment the run gets (VERBFAULT_FREEDOMS=canonical
  // ...), on top of this process's own.
  std::vector<engine::Setting> settings;
  std::string library;
  std::vector<std::string> command;
  double timeout_seconds = 300;
};

// A fault that fired, as the trace records it.
struct FiredFault {
  std::string kind;        // "flush"
  std::size_t rule = 0;    // its rule's index in the plan
  std::string object;      // the object the rule counted on: "qp#1"
  std::uint64_t nth = 0;   // the opportunity number there
  std::string level;       // "cause" or "effect" (docs/fault-kinds.md, "Fault levels")
  std::size_t record = 0;  // its trace record's index (0-based line)
  // The process whose trace has it, in a run of several commands (run_group.h).
  std::optional<std::size_t> process;
};

// What the run came to.
struct Outcome {
  std::uint64_t seed = 0;
  int status = 0;  // verbfault run's exit status (128 + N: signal N)
  bool timed_out = false;
  std::set<std::string> checks;           // the check ids that reported
  bool findings = false;                  // some of them fail the run (not only a leak at exit)
  std::vector<FiredFault> fired;          // in trace order
  std::set<std::string> windows;          // the race windows it reached (record/window.h)
  std::string reproduce;                  // the "reproduce:" line
  std::optional<std::string> trace_hash;  // the library's, as 16 hex digits
  std::string signature;                  // exit status or signal or timeout, checks, first fault
  bool failed = false;
  double seconds = 0;  // wall clock, when the runner measured it
};

class ForkServer;

// Starts the run in a process group of its own (a timeout ends the whole
// group), stdout and stderr into `log`, the trace into `trace`; through
// `server` (fork_server.h) when given. Returns the pid, or -1 with errno.
pid_t start_seed_run(const SeedRun& run, const std::filesystem::path& log,
                     const std::filesystem::path& trace, ForkServer* server = nullptr);

// Reads what an ended run left: `status` as verbfault run passes it on
// (process.h). A run of several commands left a trace per process
// (run_group.h): their faults are read in process order.
// `pass_statuses`: the exit statuses that count as a pass when no check
// reported (0 alone by default).
Outcome judge_seed_run(std::uint64_t seed, int status, bool timed_out,
                       const std::filesystem::path& log, const std::filesystem::path& trace,
                       const std::vector<int>& pass_statuses = {0});

// The paths of a seed's log and trace in `dir`.
std::filesystem::path log_path(const std::filesystem::path& dir, std::uint64_t seed);
std::filesystem::path trace_path(const std::filesystem::path& dir, std::uint64_t seed);

// This program (/proc/self/exe), to run `verbfault run` with.
std::string self_executable();

// A fresh directory under the temporary directory; removed by the caller.
std::filesystem::path make_temporary_directory(const char* what);

}  // namespace verbfault::cli

// `verbfault run`: an unmodified program under the harness.
#pragma once

#include "process_group.h"
#include "verbfault/plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace verbfault::cli {

struct RunOptions {
  std::optional<std::uint64_t> seed;
  std::optional<std::string> plan_file;
  std::vector<std::string> faults;  // one-line rules
  std::optional<std::string> trace;
  // --findings FILE: the runtime checks' findings that fail the run, kept
  // as JSON Lines (one object a finding: check, object, message,
  // trace_position, replay); otherwise in a temporary file, removed.
  std::optional<std::string> findings;
  bool check_determinism = false;
  // VERBFAULT_THREADS for the program: "pct..." (default), "random", "free".
  std::optional<std::string> threads;
  // VERBFAULT_HANG_AFTER for the program (observers/checkers/hang_watch.h):
  // seconds without progress before a hung run ends with 122. Wall clock:
  // not on the reproduce line.
  std::optional<std::string> hang_after;
  std::string library;  // libverbfault.so to preload
  // Where `library` came from, as an error names it: "--library" or
  // "VERBFAULT_LIBRARY".
  std::string library_source = "--library";
  // Over all the run's processes, wall clock (process_group.h); none: no limit.
  std::optional<double> timeout_seconds;
  // How long the others may run on once a process failed (process_group.h).
  double peer_grace_seconds = kDefaultPeerGraceSeconds;
  // How long process i may take to listen before i+1 starts anyway
  // (process_group.h); 0: all at once. Wall clock, as the two above: not on
  // the reproduce line (what the processes do does not depend on it once
  // each client finds its server listening).
  double start_wait_seconds = kDefaultStartWaitSeconds;
  // The program and its arguments; several commands separated by ":::"
  // (command_list.h) are started together as one run (run_group.h).
  std::vector<std::string> command;

  bool operator==(const RunOptions&) const = default;
};

// The plan of --plan FILE then --fault RULE...; throws PlanError.
Plan read_plan(const std::optional<std::string>& plan_file, const std::vector<std::string>& faults);

// Returns the exit status of `verbfault run` (see process.h).
int run(const RunOptions& options);

}  // namespace verbfault::cli

// The harness configuration a process runs with, read once from the
// environment (`verbfault run` sets these variables; a test runner can set
// them directly):
//   VERBFAULT_SEED   the 64-bit seed (decimal or 0x hex); drawn and printed
//                    when a plan is given without one
//   VERBFAULT_PLAN   path of a YAML plan file
//   VERBFAULT_FAULTS rules in the one-line form, separated by ';'
//   VERBFAULT_TRACE  where to write the JSON Lines trace
//   VERBFAULT_CHECKS which runtime checks run (observers/checkers/check_catalogue.h)
//   VERBFAULT_FINDINGS  a file the checks' findings are appended to (JSON
//                    Lines; verbfault run sets it to count them)
//   VERBFAULT_FREEDOMS  "drawn" (default): the simulated device draws the
//                    choices the verbs leave open from the seed;
//                    "canonical": it takes the canonical ones
//   VERBFAULT_PROC   this process's member index in its run, 0..63 (verbfault
//                    run sets it per command): what `proc=N` selectors match
//   VERBFAULT_SUMMARY   a file the end-of-run line goes to instead of
//                    stderr, appended as "pid=P seed=S hash=H records=R"
//                    (verbfault run sets it to print each process's line
//                    of a multi-process run)
//   VERBFAULT_THREADS   "pct[:depth=D][:steps=K]" (unset: pct) or "random",
//                    each with ":escape=MS": the program's threads run
//                    one at a time, chosen from the seed, whenever the
//                    harness is active (threads/scheduler); "free": as
//                    the kernel schedules them
//   VERBFAULT_STARTED   a file the harness creates once it has read this
//                    configuration (verbfault run sets it, and fails a run
//                    whose program never created it: the harness was not
//                    loaded, e.g. a static or setuid program)
// A bad value is never ignored: the process stops with one line naming the
// variable and what was expected (exit status exit_status::kUsage).
#pragma once

#include "check_catalogue.h"
#include "verbfault/exit_status.h"
#include "hang_watch.h"
#include "process_ref.h"
#include "scheduler.h"
#include "verbfault/plan.h"

#include <cstdint>
#include <optional>
#include <string>

namespace verbfault::interposer {

struct Config {
  std::uint64_t seed = 0;
  bool seed_given = false;
  Plan plan;
  std::optional<std::string> trace_path;
  bool draw_freedoms = true;                  // VERBFAULT_FREEDOMS
  std::optional<scheduler::Options> threads;  // VERBFAULT_THREADS; nullopt: free
  checkers::CheckSelection checks = checkers::CheckSelection::parse("", "");
  std::string findings_file;
  std::string summary_file;  // VERBFAULT_SUMMARY
  // VERBFAULT_CM_LEVEL=effect: the simulated connection manager is run as
  // if it were a kernel's (relayed, its cm_* faults made at effect level).
  bool cm_effect_level = false;
  // VERBFAULT_HANG_AFTER: wall-clock time without progress after which
  // the hang watchdog ends the run (hang_watchdog.h); 0: off.
  std::uint64_t hang_after_ns =
      static_cast<std::uint64_t>(checkers::kDefaultHangAfterSeconds * 1e9);
  // For proc= selectors: VERBFAULT_PROC and the basename of argv[0].
  engine::ProcessIdentity process;
  // Whether the harness does anything beyond routing: a plan, a seed or a
  // trace was asked for. Without it every call is the provider's own.
  bool active = false;
};

// Parses the environment; throws std::runtime_error with a one-line message.
Config config_from_environment();

// Creates VERBFAULT_STARTED's file, if set: the harness runs in this
// process. First of all, before the rest of the configuration is read (a
// bad one is then the harness's own error, exit exit_status::kUsage). A file
// that cannot be created is not an error here: the parent that asked for
// it reports the missing file.
void announce_started() noexcept;

}  // namespace verbfault::interposer

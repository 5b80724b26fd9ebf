// The one builder of the line that replays a run. Every knob that changes
// a run is on it: the seed, the plan (a file and/or one-line rules), and
// the settings of the environment that change what the harness or the
// simulated device does (replay_settings()). Used by `verbfault run` (its
// "reproduce:" line), the runtime checks' findings, and Session::reproduce.
#pragma once

#include "verbfault/plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace verbfault::engine {

// A setting of the environment as VERBFAULT_NAME=value.
using Setting = std::pair<std::string, std::string>;

struct Replay {
  std::uint64_t seed = 0;
  std::optional<std::string> plan_file;  // absolute path; its rules come first
  std::vector<Rule> rules;               // one-line rules (after the file's)
  std::vector<Setting> settings;         // replay_settings(), or chosen
  // How the threads are scheduled when not the default (VERBFAULT_THREADS,
  // `--threads`): "free", "random", "pct:depth=5"...
  std::optional<std::string> threads;
  // The program and its arguments; a run of several commands has them all,
  // separated by ":::" words, as `verbfault run` takes them.
  std::vector<std::string> command;
};

// The variables besides seed and plan that change a run, with the values
// this process has, in a fixed order: VERBFAULT_FREEDOMS, VERBFAULT_CHECKS,
// VERBFAULT_SIM_DEVICES, VERBFAULT_SIM_PROFILE, VERBFAULT_DESTROY_CQ_UNACKED,
// VERBFAULT_PROC.
std::vector<Setting> replay_settings();
// VERBFAULT_THREADS of this process, if set (Replay::threads).
std::optional<std::string> threads_setting();

// Rules in the one-line form, separated by "; " (VERBFAULT_FAULTS).
std::string rules_line(const std::vector<Rule>& rules);

// A word as a POSIX shell reads it back: unchanged when it has no special
// characters, else in single quotes.
std::string shell_quote(std::string_view word);

// "VERBFAULT_SEED=42 VERBFAULT_FAULTS='flush qp#0 nth=3' VERBFAULT_THREADS=random ... [command]":
// for a test runner or any program started by hand.
std::string environment_line(const Replay& replay);
// "[settings] verbfault run --seed 42 --fault 'flush qp#0 nth=3' --threads random -- command".
std::string run_line(const Replay& replay);

}  // namespace verbfault::engine

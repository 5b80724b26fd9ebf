#include "replay.h"

#include <cstdlib>

namespace verbfault::engine {

namespace {

// In the order they are printed.
// VERBFAULT_PROC: what proc=N rules match (verbfault run sets it for each
// of several commands, and leaves it out of their line).
constexpr const char* kReplaySettings[] = {
    "VERBFAULT_FREEDOMS",           "VERBFAULT_CHECKS", "VERBFAULT_SIM_DEVICES",
    "VERBFAULT_SIM_PROFILE",  // the kind of device (fakes/sim/profiles/profile_selection.h)
    "VERBFAULT_DESTROY_CQ_UNACKED", "VERBFAULT_PROC"};

std::string settings_prefix(const Replay& replay) {
  std::string line;
  for (const auto& [name, value] : replay.settings) line += name + "=" + shell_quote(value) + " ";
  return line;
}

std::string command_suffix(const Replay& replay) {
  std::string line;
  for (const std::string& word : replay.command) line += " " + shell_quote(word);
  return line;
}

}  // namespace

std::string rules_line(const std::vector<Rule>& rules) {
  std::string joined;
  for (const Rule& rule : rules) joined += (joined.empty() ? "" : "; ") + to_cli(rule);
  return joined;
}

std::vector<Setting> replay_settings() {
  std::vector<Setting> settings;
  for (const char* name : kReplaySettings)
    if (const char* value = std::getenv(name)) settings.emplace_back(name, value);
  return settings;
}

std::optional<std::string> threads_setting() {
  if (const char* value = std::getenv("VERBFAULT_THREADS")) return std::string(value);
  return std::nullopt;
}

std::string shell_quote(std::string_view word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-./=:,+@%") == std::string_view::npos;
  if (plain) return std::string(word);
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string environment_line(const Replay& replay) {
  std::string line = "VERBFAULT_SEED=" + std::to_string(replay.seed);
  if (replay.plan_file) line += " VERBFAULT_PLAN=" + shell_quote(*replay.plan_file);
  if (!replay.rules.empty()) line += " VERBFAULT_FAULTS=" + shell_quote(rules_line(replay.rules));
  if (replay.threads) line += " VERBFAULT_THREADS=" + shell_quote(*replay.threads);
  if (!replay.settings.empty()) line += " " + settings_prefix(replay), line.pop_back();
  return line + command_suffix(replay);
}

std::string run_line(const Replay& replay) {
  std::string line =
      settings_prefix(replay) + "verbfault run --seed " + std::to_string(replay.seed);
  if (replay.plan_file) line += " --plan " + shell_quote(*replay.plan_file);
  for (const Rule& rule : replay.rules) line += " --fault " + shell_quote(to_cli(rule));
  if (replay.threads) line += " --threads " + shell_quote(*replay.threads);
  return line + " --" + command_suffix(replay);
}

}  // namespace verbfault::engine

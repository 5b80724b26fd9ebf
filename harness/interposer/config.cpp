#include "config.h"

#include <cstdlib>
#include <random>
#include <stdexcept>

namespace verbfault::interposer {

Config config_from_environment() {
  Config config;
  auto variable = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  if (auto seed = variable("VERBFAULT_SEED")) {
    config.seed = verbfault::parse_seed(*seed, "VERBFAULT_SEED");
    config.seed_given = true;
  }
  if (auto path = variable("VERBFAULT_PLAN")) {
    if (path->empty()) throw std::runtime_error("VERBFAULT_PLAN='': expected a plan file path");
    config.plan = parse_plan_file(*path);
  }
  if (auto rules = variable("VERBFAULT_FAULTS")) {
    Plan more = parse_rules(*rules, "VERBFAULT_FAULTS");
    config.plan.rules.insert(config.plan.rules.end(), more.rules.begin(), more.rules.end());
  }
  if (auto trace = variable("VERBFAULT_TRACE")) {
    if (trace->empty()) throw std::runtime_error("VERBFAULT_TRACE='': expected a file path");
    config.trace_path = *trace;
  }
  if (auto freedoms = variable("VERBFAULT_FREEDOMS")) {
    if (*freedoms != "drawn" && *freedoms != "canonical")
      throw std::runtime_error("VERBFAULT_FREEDOMS='" + *freedoms +
                               "': expected 'drawn' or 'canonical'");
    config.draw_freedoms = *freedoms == "drawn";
  }
  if (auto checks = variable("VERBFAULT_CHECKS"))
    config.checks = checkers::CheckSelection::parse(*checks, "VERBFAULT_CHECKS");
  if (auto findings = variable("VERBFAULT_FINDINGS")) {
    if (findings->empty()) throw std::runtime_error("VERBFAULT_FINDINGS='': expected a file path");
    config.findings_file = *findings;
  }
  config.active = config.seed_given || !config.plan.rules.empty() || config.trace_path;
  if (!config.seed_given && !config.plan.rules.empty()) {
    // A plan needs a seed; one drawn here is printed so the run replays.
    std::random_device entropy;
    config.seed = (std::uint64_t{entropy()} << 32) | entropy();
  }
  // The program's threads are scheduled by the seed whenever the harness
  // runs (docs/architecture.md, "Threads"), unless VERBFAULT_THREADS=free.
  if (auto threads = variable("VERBFAULT_THREADS")) {
    try {
      config.threads = scheduler::parse_threads(*threads);
    } catch (const std::invalid_argument& error) {
      throw std::runtime_error(std::string("VERBFAULT_THREADS=") + error.what());
    }
    if (config.threads && !config.active)
      throw std::runtime_error("VERBFAULT_THREADS='" + *threads +
                               "': the scheduler runs under a seed; set VERBFAULT_SEED too");
  } else if (config.active) {
    config.threads = scheduler::Options{};
  }
  if (config.threads) config.threads->seed = config.seed;
  return config;
}

}  // namespace verbfault::interposer

#include "config.h"

#include "launch.h"
#include "trace_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

namespace verbfault::interposer {

namespace {

// The basename of argv[0]: the name the process was started by.
std::string program_name() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string argv0;
  std::getline(in, argv0, '\0');
  const std::size_t slash = argv0.rfind('/');
  return slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
}

engine::ProcessIdentity process_identity(const std::optional<std::string>& proc) {
  engine::ProcessIdentity self;
  self.name = program_name();
  if (!proc) return self;
  // The index only, in decimal (as the simulated fabric reads it): a name
  // is never a member (VERBFAULT_PROC=server is a mistake).
  const auto ref = engine::parse_process(*proc);
  if (!ref || !ref->index || proc->find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error("VERBFAULT_PROC='" + *proc + "': expected a member index 0..63");
  self.index = ref->index;
  return self;
}

}  // namespace

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
    try {
      config.plan = parse_plan_file(*path);
    } catch (const PlanError& error) {
      // The file's own errors name it ("x.yaml:3: ..."); the variable says
      // where the name came from.
      throw std::runtime_error("VERBFAULT_PLAN='" + *path + "': " + error.what());
    }
  }
  if (auto rules = variable("VERBFAULT_FAULTS")) {
    if (rules->empty())
      throw std::runtime_error(
          "VERBFAULT_FAULTS='': expected rules in the one-line form, separated by ';'");
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
  if (auto summary = variable("VERBFAULT_SUMMARY")) {
    if (summary->empty()) throw std::runtime_error("VERBFAULT_SUMMARY='': expected a file path");
    config.summary_file = *summary;
  }
  // (announce_started() has created it already.)
  if (auto started = variable("VERBFAULT_STARTED"); started && started->empty())
    throw std::runtime_error("VERBFAULT_STARTED='': expected a file path");
  // The simulated fabric's own variables (fakes/sim) are read there, when
  // a device is listed; checked here too, so that a bad one stops the
  // program before main like every other, instead of leaving it without a
  // device.
  if (auto size = variable("VERBFAULT_FABRIC_SIZE")) {
    const bool digits = !size->empty() && size->size() <= 2 &&
                        size->find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(*size) < 1 || std::stoi(*size) > 64)
      throw std::runtime_error("VERBFAULT_FABRIC_SIZE='" + *size +
                               "': expected a number of processes 1..64");
  }
  if (auto fabric = variable("VERBFAULT_FABRIC")) {
    if (fabric->empty() || fabric->size() > 64 ||
        fabric->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                  "0123456789._-") != std::string::npos)
      throw std::runtime_error("VERBFAULT_FABRIC='" + *fabric +
                               "': expected a fabric name of 1 to 64 characters from "
                               "[A-Za-z0-9._-]");
  }
  if (auto level = variable("VERBFAULT_CM_LEVEL")) {
    if (*level != "cause" && *level != "effect")
      throw std::runtime_error("VERBFAULT_CM_LEVEL='" + *level +
                               "': expected cause (the simulated connection manager makes each "
                               "cm_* fault) or effect (it is run as a kernel's, its faults made "
                               "at effect level)");
    config.cm_effect_level = *level == "effect";
  }
  if (auto hang_after = variable("VERBFAULT_HANG_AFTER"))
    config.hang_after_ns = checkers::parse_hang_after(*hang_after, "VERBFAULT_HANG_AFTER");
  config.process = process_identity(variable("VERBFAULT_PROC"));
  // A rank of a parallel launcher's job (`verbfault run -- mpirun -np N`):
  // process index VERBFAULT_PROC + 1 + rank, as its simulated device's
  // member index (sim/fabric/fabric_membership.cpp: the launcher is VERBFAULT_PROC),
  // and a trace of its own beside the launcher's (record::process_trace_path
  // of that index), which `verbfault run` collects.
  std::string rank_error;
  const std::optional<provider::LaunchedRank> rank = provider::launcher_rank(rank_error);
  if (!rank_error.empty()) throw std::runtime_error(rank_error);
  if (rank) {
    const std::uint32_t index = config.process.index.value_or(0) + 1 + rank->rank;
    config.process.index = index;
    if (config.trace_path)
      config.trace_path = record::process_trace_path(*config.trace_path, index);
  }
  config.active = config.seed_given || !config.plan.rules.empty() || config.trace_path;
  if (!config.seed_given && !config.plan.rules.empty()) {
    // A plan needs a seed; one drawn here is printed so the run replays.
    std::random_device entropy;
    config.seed = (std::uint64_t{entropy()} << 32) | entropy();
  }
  // The program's threads are scheduled by the seed whenever the harness
  // runs (docs/threads-and-time.md), unless VERBFAULT_THREADS=free.
  if (auto threads = variable("VERBFAULT_THREADS")) {
    try {
      config.threads = scheduler::parse_threads(*threads);
    } catch (const std::invalid_argument& error) {
      throw std::runtime_error(error.what()[0] == '\''
                                   ? std::string("VERBFAULT_THREADS=") + error.what()
                                   : "VERBFAULT_THREADS='" + *threads + "': " + error.what());
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

void announce_started() noexcept {
  const char* started = std::getenv("VERBFAULT_STARTED");
  if (started == nullptr || *started == '\0') return;
  const int fd = ::open(started, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
}

}  // namespace verbfault::interposer

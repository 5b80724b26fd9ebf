#include "run.h"

#include "journal.h"
#include "process.h"
#include "replay.h"
#include "replay_file.h"
#include "scheduler.h"
#include "verbfault/plan.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <vector>

namespace verbfault::cli {

namespace {

namespace fs = std::filesystem;

// The rules of --fault options, parsed (run() has checked them).
std::vector<Rule> fault_rules(const std::vector<std::string>& faults) {
  std::vector<Rule> rules;
  for (const std::string& fault : faults) rules.push_back(parse_rule(fault, "--fault"));
  return rules;
}

// Every knob of this run (engine/plan/replay.h).
engine::Replay replay_of(const RunOptions& options, std::uint64_t seed) {
  engine::Replay replay;
  replay.seed = seed;
  if (options.plan_file) replay.plan_file = fs::absolute(*options.plan_file).string();
  replay.rules = fault_rules(options.faults);
  replay.settings = engine::replay_settings();
  replay.threads = options.threads ? options.threads : engine::threads_setting();
  replay.command = options.command;
  return replay;
}

// The first record where two traces differ, or nothing when identical.
struct Difference {
  std::size_t line = 0;
  std::string first, second;
};
std::optional<Difference> compare_traces(const std::string& a, const std::string& b) {
  std::ifstream first(a), second(b);
  Difference difference;
  for (;;) {
    ++difference.line;
    const bool more_first = static_cast<bool>(std::getline(first, difference.first));
    const bool more_second = static_cast<bool>(std::getline(second, difference.second));
    if (!more_first && !more_second) return std::nullopt;
    if (!more_first) difference.first = "(end of trace)";
    if (!more_second) difference.second = "(end of trace)";
    if (!more_first || !more_second || difference.first != difference.second) return difference;
  }
}

// Where a run stopped being a function of the seed: the records the
// scheduler's watchdog writes when it releases a thread blocked outside
// the harness ({"obj":"thread#T","event":"escaped","activity":...}).
std::vector<std::string> escapes_in(const std::string& trace) {
  std::vector<std::string> escapes;
  std::ifstream in(trace);
  std::size_t position = 0;
  for (std::string line; std::getline(in, line); ++position) {
    if (line.find("\"event\":\"escaped\"") == std::string::npos) continue;
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) continue;
    escapes.push_back("not deterministic from trace record " + std::to_string(position) + ": " +
                      record.value("obj", std::string("a thread")) + " was " +
                      record.value("activity", std::string("blocked")) + " outside the harness");
  }
  return escapes;
}

// A program that ended before the end of its run (SIGKILL, or a crash its
// own signal handler took) leaves its records in the journal beside its
// trace (observers/trace/journal.h): rendered here into the trace.
void recover_journal(const std::string& trace) {
  const std::string journal = trace + ".journal";
  std::error_code ignored;
  if (!fs::exists(journal, ignored)) return;
  const int fd = ::open(trace.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "verbfault: cannot write the trace '%s': %s (its journal '%s' is kept)\n",
                 trace.c_str(), std::strerror(errno), journal.c_str());
    return;
  }
  std::string error;
  const long long records = observers::journal::render_file(journal, fd, error);
  ::close(fd);
  if (records < 0) {
    std::fprintf(stderr, "verbfault: %s (the journal is kept)\n", error.c_str());
    return;
  }
  fs::remove(journal, ignored);
  std::fprintf(stderr,
               "verbfault: the program ended before writing its trace: %lld record%s recovered "
               "from its journal into %s\n",
               records, records == 1 ? "" : "s", trace.c_str());
}

}  // namespace

Plan read_plan(const std::optional<std::string>& plan_file,
               const std::vector<std::string>& faults) {
  Plan plan;
  if (plan_file) plan = parse_plan_file(*plan_file);
  for (const std::string& fault : faults) plan.rules.push_back(parse_rule(fault, "--fault"));
  return plan;
}

int run(const RunOptions& options) {
  Plan plan;
  try {
    plan = read_plan(options.plan_file, options.faults);
  } catch (const PlanError& error) {
    std::fprintf(stderr, "verbfault: %s\n", error.what());
    return kExitUsage;
  }
  std::uint64_t seed = 0;
  if (options.seed) {
    seed = *options.seed;
  } else {
    std::random_device entropy;
    seed = (std::uint64_t{entropy()} << 32) | entropy();
  }
  const engine::Replay replay = replay_of(options, seed);
  // The scheduler's knobs, printed with the seed: both fix the interleaving.
  std::optional<scheduler::Options> threads;
  try {
    threads = scheduler::parse_threads(replay.threads.value_or("pct"));
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "verbfault: %s%s\n",
                 options.threads ? "--threads " : "VERBFAULT_THREADS=", error.what());
    return kExitUsage;
  }
  std::fprintf(stderr, "verbfault: seed %llu%s, threads %s\n",
               static_cast<unsigned long long>(seed), options.seed ? "" : " (drawn)",
               threads ? scheduler::describe(*threads).c_str() : "free (not deterministic)");
  std::fprintf(stderr, "verbfault: plan: %zu rule%s\n", plan.rules.size(),
               plan.rules.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < plan.rules.size(); ++i)
    std::fprintf(stderr, "verbfault:   #%zu %s\n", i, to_cli(plan.rules[i]).c_str());
  std::fprintf(stderr, "verbfault: reproduce: %s\n", engine::run_line(replay).c_str());

  std::map<std::string, std::string> environment;
  const char* preload = std::getenv("LD_PRELOAD");
  environment["LD_PRELOAD"] =
      options.library + (preload != nullptr && *preload ? std::string(":") + preload : "");
  environment["VERBFAULT_SEED"] = std::to_string(seed);
  if (replay.threads) environment["VERBFAULT_THREADS"] = *replay.threads;
  if (options.plan_file) environment["VERBFAULT_PLAN"] = fs::absolute(*options.plan_file);
  if (!replay.rules.empty()) environment["VERBFAULT_FAULTS"] = engine::rules_line(replay.rules);
  // The line a finding in the program prints to replay the run.
  environment["VERBFAULT_REPRODUCE"] = engine::run_line(replay);
  // The runtime checks append their findings here; a program that passes
  // with findings makes `verbfault run` fail (kExitFindings).
  const std::string findings =
      (fs::temp_directory_path() / ("verbfault-" + std::to_string(getpid()) + ".findings"))
          .string();
  fs::remove(findings);
  environment["VERBFAULT_FINDINGS"] = findings;
  auto judge = [&](int status) {
    std::ifstream in(findings);
    std::size_t count = 0;
    for (std::string line; std::getline(in, line);) ++count;
    fs::remove(findings);
    if (count == 0) return status;
    std::fprintf(stderr, "verbfault: %zu runtime check finding%s (listed above)\n", count,
                 count == 1 ? "" : "s");
    return status == 0 ? kExitFindings : status;
  };

  if (!options.check_determinism) {
    if (options.trace) environment["VERBFAULT_TRACE"] = *options.trace;
    const int status = run_program(options.command, environment);
    if (options.trace) recover_journal(*options.trace);
    return judge(status);
  }

  // Twice, with the same seed and plan: the traces must be identical.
  const std::string base =
      options.trace
          ? *options.trace
          : (fs::temp_directory_path() / ("verbfault-" + std::to_string(getpid()) + ".trace"))
                .string();
  const std::string traces[2] = {base + ".1", base + ".2"};
  int status[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    environment["VERBFAULT_TRACE"] = traces[i];
    std::fprintf(stderr, "verbfault: determinism check: run %d of 2\n", i + 1);
    const int exit_status = run_program(options.command, environment);
    recover_journal(traces[i]);
    status[i] = judge(exit_status);
  }
  const auto difference = compare_traces(traces[0], traces[1]);
  int result = status[0];
  if (difference) {
    std::fprintf(stderr,
                 "verbfault: determinism check FAILED: the traces differ at record %zu\n"
                 "verbfault:   run 1: %s\nverbfault:   run 2: %s\n",
                 difference->line, difference->first.c_str(), difference->second.c_str());
    result = kExitNondeterministic;
    // A thread released to run outside the schedule explains a difference.
    for (int i = 0; i < 2; ++i)
      for (const std::string& escape : escapes_in(traces[i]))
        std::fprintf(stderr, "verbfault:   why: in run %d, %s\n", i + 1, escape.c_str());
  } else if (status[0] != status[1]) {
    std::fprintf(stderr, "verbfault: determinism check FAILED: exit status %d, then %d\n",
                 status[0], status[1]);
    result = kExitNondeterministic;
  } else {
    std::fprintf(stderr, "verbfault: determinism check passed: identical traces (file FNV-1a %s)\n",
                 file_hash(traces[0]).c_str());
  }
  if (!options.trace)
    for (const std::string& trace : traces) fs::remove(trace);
  return result;
}

}  // namespace verbfault::cli

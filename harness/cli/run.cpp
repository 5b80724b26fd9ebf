#include "run.h"

#include "command_list.h"
#include "hang_watch.h"
#include "preload_line.h"
#include "process.h"
#include "replay.h"
#include "replay_file.h"
#include "run_group.h"
#include "scheduler.h"
#include "verbfault/plan.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
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
  // Several commands: verbfault run numbers the processes itself.
  if (split_commands(options.command).size() > 1)
    std::erase_if(replay.settings,
                  [](const engine::Setting& setting) { return setting.first == "VERBFAULT_PROC"; });
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
// the harness ({"obj":"thread#T","event":"escaped","activity":...}), and
// those of a wait across processes that gave up on a peer outside verbs
// ({"obj":"cq#N","event":"timing","what":...}, fabric_wait.cpp).
std::vector<std::string> escapes_in(const std::string& trace) {
  std::vector<std::string> escapes;
  std::ifstream in(trace);
  std::size_t position = 0;
  for (std::string line; std::getline(in, line); ++position) {
    const bool escaped = line.find("\"event\":\"escaped\"") != std::string::npos;
    if (!escaped && line.find("\"event\":\"timing\"") == std::string::npos) continue;
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) continue;
    const std::string where =
        "not deterministic from trace record " + std::to_string(position) + ": ";
    if (escaped)
      escapes.push_back(where + record.value("obj", std::string("a thread")) + " was " +
                        record.value("activity", std::string("blocked")) + " outside the harness");
    else
      escapes.push_back(where + record.value("obj", std::string("a wait")) + " " +
                        record.value("what", std::string("gave up waiting")));
  }
  return escapes;
}

// The verdict of --check-determinism on the two runs' traces (one per
// process: each command's, and then each rank a launcher started) and
// exit statuses; the run's status when they agree.
int compare_runs(const std::vector<std::string> (&traces)[2], const int (&status)[2],
                 std::size_t commands) {
  // A process that left no trace (its trace could not be written, it was
  // not started) leaves nothing to compare: the check is not made, and
  // never passes.
  std::optional<std::string> missing;
  for (int i = 0; i < 2 && !missing; ++i) {
    if (traces[i].size() < commands) missing = "run " + std::to_string(i + 1);
    for (std::size_t p = 0; p < traces[i].size() && !missing; ++p) {
      std::error_code error;
      if (!fs::is_regular_file(traces[i][p], error))
        missing = "run " + std::to_string(i + 1) + ", process " + std::to_string(p) + " (" +
                  traces[i][p] + ")";
    }
  }
  if (missing) {
    std::fprintf(stderr, "verbfault: determinism check not made: no trace from %s\n",
                 missing->c_str());
    return status[0] != 0 ? status[0] : exit_status::kNondeterministic;
  }
  // A launcher that started another number of ranks the second time.
  if (traces[0].size() != traces[1].size()) {
    std::fprintf(stderr,
                 "verbfault: determinism check FAILED: run 1 traced %zu processes, run 2 %zu\n",
                 traces[0].size(), traces[1].size());
    return exit_status::kNondeterministic;
  }
  std::optional<Difference> difference;
  std::size_t differing = 0;  // the first process whose traces differ
  for (std::size_t i = 0; i < traces[0].size() && !difference; ++i) {
    difference = compare_traces(traces[0][i], traces[1][i]);
    differing = i;
  }
  if (difference) {
    const std::string whose =
        traces[0].size() > 1 ? " of process " + std::to_string(differing) : "";
    std::fprintf(stderr,
                 "verbfault: determinism check FAILED: the traces%s differ at record %zu\n"
                 "verbfault:   run 1: %s\nverbfault:   run 2: %s\n",
                 whose.c_str(), difference->line, difference->first.c_str(),
                 difference->second.c_str());
    // A thread released to run outside the schedule explains a difference.
    for (int i = 0; i < 2; ++i)
      for (const std::string& escape : escapes_in(traces[i][differing]))
        std::fprintf(stderr, "verbfault:   why: in run %d, %s\n", i + 1, escape.c_str());
    return exit_status::kNondeterministic;
  }
  if (status[0] != status[1]) {
    std::fprintf(stderr, "verbfault: determinism check FAILED: exit status %d, then %d\n",
                 status[0], status[1]);
    return exit_status::kNondeterministic;
  }
  std::string hashes;
  for (const std::string& trace : traces[0])
    hashes += (hashes.empty() ? "" : ", ") + file_hash(trace);
  std::fprintf(stderr, "verbfault: determinism check passed: identical traces (file FNV-1a %s)\n",
               hashes.c_str());
  return status[0];
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
  // A library ld.so cannot open is "ignored" (ld.so(8)): the program would
  // run without the harness and its status would pass as a result. A bare
  // name is searched for by ld.so; the run's handshake (run_group.h)
  // catches one it does not find.
  if (options.library.find('/') != std::string::npos) {
    std::error_code error;
    const auto kind = fs::status(options.library, error).type();
    if (kind != fs::file_type::regular || ::access(options.library.c_str(), R_OK) != 0) {
      const std::string why =
          kind == fs::file_type::directory ? "is a directory"
          : kind == fs::file_type::not_found
              ? "no such file"
              : "cannot be read: " + std::string(std::strerror(error ? error.value() : errno));
      std::fprintf(stderr, "verbfault: %s '%s': %s: expected the harness library libverbfault.so\n",
                   options.library_source.c_str(), options.library.c_str(), why.c_str());
      return exit_status::kUsage;
    }
  }
  if (options.hang_after) {
    try {
      checkers::parse_hang_after(*options.hang_after, "--hang-after");
    } catch (const std::runtime_error& error) {
      std::fprintf(stderr, "verbfault: %s\n", error.what());
      return exit_status::kUsage;
    }
  }
  Plan plan;
  try {
    plan = read_plan(options.plan_file, options.faults);
  } catch (const PlanError& error) {
    std::fprintf(stderr, "verbfault: %s\n", error.what());
    return exit_status::kUsage;
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
    // The scheduler's message starts with the value quoted, or names a part of it.
    const std::string value = "'" + replay.threads.value_or("pct") + "'";
    std::fprintf(stderr, "verbfault: %s%s%s\n",
                 options.threads ? "--threads " : "VERBFAULT_THREADS=",
                 error.what()[0] == '\'' ? "" : (value + ": ").c_str(), error.what());
    return exit_status::kUsage;
  }
  // The runtime checks append their findings here; a program that passes
  // with findings makes `verbfault run` fail (exit_status::kFindings).
  // Kept where --findings says, else a temporary file.
  const std::string findings =
      options.findings
          ? fs::absolute(*options.findings).string()
          : (fs::temp_directory_path() / ("verbfault-" + std::to_string(getpid()) + ".findings"))
                .string();
  // Each run starts with an empty file (the processes append to it).
  auto start_findings = [&]() -> bool {
    std::ofstream truncated(findings, std::ios::trunc);
    if (truncated) return true;
    std::fprintf(stderr,
                 "verbfault: --findings '%s': cannot be written (expected a file path in an "
                 "existing, writable directory)\n",
                 findings.c_str());
    return false;
  };
  if (!start_findings()) return exit_status::kUsage;
  std::fprintf(stderr, "verbfault: seed %llu%s, threads %s\n",
               static_cast<unsigned long long>(seed), options.seed ? "" : " (drawn)",
               threads ? scheduler::describe(*threads).c_str() : "free (not deterministic)");
  std::fprintf(stderr, "verbfault: plan: %zu rule%s\n", plan.rules.size(),
               plan.rules.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < plan.rules.size(); ++i)
    std::fprintf(stderr, "verbfault:   #%zu %s\n", i, to_cli(plan.rules[i]).c_str());
  std::fprintf(stderr, "verbfault: reproduce: %s\n", engine::run_line(replay).c_str());

  std::map<std::string, std::string> environment;
  environment["LD_PRELOAD"] = preload_line(options.library, std::getenv("LD_PRELOAD"));
  environment["VERBFAULT_SEED"] = std::to_string(seed);
  if (replay.threads) environment["VERBFAULT_THREADS"] = *replay.threads;
  if (options.hang_after) environment["VERBFAULT_HANG_AFTER"] = *options.hang_after;
  if (options.plan_file) environment["VERBFAULT_PLAN"] = fs::absolute(*options.plan_file);
  if (!replay.rules.empty()) environment["VERBFAULT_FAULTS"] = engine::rules_line(replay.rules);
  // The line a finding in the program prints to replay the run.
  environment["VERBFAULT_REPRODUCE"] = engine::run_line(replay);
  environment["VERBFAULT_FINDINGS"] = findings;
  auto judge = [&](int status) {
    std::ifstream in(findings);
    std::size_t count = 0;
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json finding =
          nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      // A line cut short (a process killed while it wrote) still counts.
      count += finding.is_discarded() || finding.value("fails_run", true);
    }
    if (!options.findings) fs::remove(findings);
    if (count == 0) return status;
    std::fprintf(stderr, "verbfault: %zu runtime check finding%s (listed above)\n", count,
                 count == 1 ? "" : "s");
    return status == 0 ? exit_status::kFindings : status;
  };

  const std::vector<Command> commands = split_commands(options.command);
  CommandsRun group;
  group.environment = environment;
  group.seed = seed;
  group.timeout_seconds = options.timeout_seconds;
  group.peer_grace_seconds = options.peer_grace_seconds;
  group.start_wait_seconds = options.start_wait_seconds;
  if (!options.check_determinism) {
    group.trace = options.trace;
    return judge(run_commands(commands, group).status);
  }

  // Twice, with the same seed and plan: the traces must be identical.
  const std::string base =
      options.trace
          ? *options.trace
          : (fs::temp_directory_path() / ("verbfault-" + std::to_string(getpid()) + ".trace"))
                .string();
  // Each run's traces: one per process.
  std::vector<std::string> traces[2];
  int status[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    group.trace = base + "." + std::to_string(i + 1);
    if (i > 0 && !start_findings()) return exit_status::kUsage;
    std::fprintf(stderr, "verbfault: determinism check: run %d of 2\n", i + 1);
    const CommandsEnd end = run_commands(commands, group);
    traces[i] = end.traces;
    status[i] = judge(end.status);
  }
  int result = compare_runs(traces, status, commands.size());
  if (!options.trace)
    for (const auto& run_traces : traces)
      for (const std::string& trace : run_traces) fs::remove(trace);
  return result;
}

}  // namespace verbfault::cli

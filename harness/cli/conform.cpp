#include "conform.h"

#include "battery.h"
#include "report_entry.h"
#include "shard.h"
#include "process.h"
#include "race_windows.h"
#include "replay_file.h"
#include "report_files.h"
#include "run_group.h"
#include "runner.h"
#include "trace_digest.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <thread>

namespace verbfault::cli {

namespace fs = std::filesystem;
using Expected = reports::Expectation;
using reports::Verdict;

namespace {

// The files of one run under DIR/runs: NAME-seed-S.{log,jsonl,replay}.
fs::path run_file(const fs::path& runs, const std::string& name, std::uint64_t seed,
                  const char* extension) {
  return runs / (name + "-seed-" + std::to_string(seed) + extension);
}

// The entry's outcome held against what it expects (report.h).
Verdict judge(Expected expect, reports::Outcome kind, bool fired) {
  const bool clean = kind == reports::Outcome::success || kind == reports::Outcome::clean_failure;
  if (expect == Expected::success)
    return kind == reports::Outcome::success ? Verdict::conforms : Verdict::does_not_conform;
  // A fault entry whose fault never fired tested nothing, when it passed;
  // a failure without the fault is a failure all the same.
  if (!fired)
    return kind == reports::Outcome::success ? Verdict::not_exercised : Verdict::does_not_conform;
  if (expect == Expected::recovery)
    return kind == reports::Outcome::success ? Verdict::conforms : Verdict::does_not_conform;
  return clean ? Verdict::conforms : Verdict::does_not_conform;
}

}  // namespace

int conform(const ConformOptions& options) {
  Battery battery;
  try {
    battery = read_battery(options.battery);
  } catch (const BatteryError& error) {
    std::fprintf(stderr, "verbfault: %s\n", error.what());
    return exit_status::kUsage;
  }
  if (options.list_classes) {
    for (const BatteryEntry& entry : battery.entries) std::printf("%s\n", entry.name.c_str());
    return 0;
  }
  for (const std::string& name : options.classes) {
    if (std::none_of(battery.entries.begin(), battery.entries.end(),
                     [&](const BatteryEntry& entry) { return entry.name == name; })) {
      std::string known;
      for (const BatteryEntry& entry : battery.entries)
        known += (known.empty() ? "" : ", ") + entry.name;
      std::fprintf(stderr, "verbfault: conform: --class '%s': expected a fault class of the %s "
                   "battery: %s\n", name.c_str(), battery.source.c_str(), known.c_str());
      return exit_status::kUsage;
    }
  }
  const unsigned seeds = options.seeds.value_or(battery.seeds);
  const fs::path dir = options.report_dir;
  const fs::path runs_dir = dir / "runs";
  std::error_code error;
  fs::create_directories(runs_dir, error);
  if (error) {
    std::fprintf(stderr, "verbfault: conform: --report '%s': cannot make the directory: %s\n",
                 dir.c_str(), error.message().c_str());
    return exit_status::kUsage;
  }
  if (resolve_program(options.command.front()).empty()) {
    std::fprintf(stderr, "verbfault: conform: %s: command not found\n",
                 options.command.front().c_str());
    return exit_status::kNotFound;
  }

  reports::Report report;
  report.application = fs::path(options.command.front()).filename().string();
  report.command = options.command;
  report.battery = battery.source;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) report.seeds.push_back(seed);
  report.verbfault_version = verbfault_version();
  report.started_at = utc_now();
  report.race_windows = race_window_names();
  report.build = build_identity(options.library);
  for (const BatteryEntry& entry : battery.entries) report.classes.push_back(entry.name);
  if (options.shard.count > 1) report.shard = reports::Report::Shard{options.shard.index,
                                                                     options.shard.count};

  // Entry by entry, seed by seed: the report's order; a shard takes every
  // N-th of those runs (of the --class ones).
  std::vector<BatchRun> runs;
  std::size_t position = 0;
  std::size_t selected_classes = 0;
  for (const BatteryEntry& entry : battery.entries) {
    if (!options.classes.empty() && std::find(options.classes.begin(), options.classes.end(),
                                              entry.name) == options.classes.end())
      continue;
    ++selected_classes;
    for (const std::uint64_t seed : report.seeds) {
      if (!in_shard(options.shard, position++)) continue;
      BatchRun run;
      run.spec.seed = seed;
      run.spec.faults = entry.faults;
      run.spec.threads = options.threads;
      run.spec.library = options.library;
      run.spec.command = options.command;
      run.spec.timeout_seconds = options.timeout_seconds;
      run.log = run_file(runs_dir, entry.name, seed, ".log");
      run.trace = run_file(runs_dir, entry.name, seed, ".jsonl");
      runs.push_back(std::move(run));
      reports::Entry& e = report.entries.emplace_back();
      e.fault_class = entry.name;
      e.plan = entry.faults;
      e.expect = entry.expect;
      e.seed = seed;
    }
  }
  const unsigned jobs =
      options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  const std::string shard_text =
      report.shard ? ", shard " + std::to_string(options.shard.index) + "/" +
                         std::to_string(options.shard.count) + ": " +
                         std::to_string(runs.size()) + " runs"
                   : "";
  std::fprintf(
      stderr,
      "verbfault: conform: %s under the %s battery: %zu fault classes x %u seed%s%s, %u job%s\n",
      report.application.c_str(), battery.source.c_str(), selected_classes, seeds,
      seeds == 1 ? "" : "s", shard_text.c_str(), jobs, jobs == 1 ? "" : "s");

  const bool terminal = isatty(STDERR_FILENO) != 0;
  const auto began = std::chrono::steady_clock::now();
  std::size_t done = 0, failing = 0;
  BatchOptions batch;
  batch.jobs = jobs;
  batch.fork_server = options.fork_server;
  const bool started = run_batch(runs, batch, [&](std::size_t index, Outcome&& outcome) {
    reports::Entry& entry = report.entries[index];
    entry.verdict = judge(entry.expect, classify(outcome), exercised(outcome));
    fill_entry(entry, runs[index], outcome, report.race_windows, options.timeout_seconds,
               /*keep_timeline=*/true, report.provider);
    ++done;
    if (entry.verdict == Verdict::does_not_conform) {
      ++failing;
      // The run again, exactly: its replay file beside its log and trace.
      const fs::path replay = run_file(runs_dir, entry.fault_class, entry.seed, ".replay");
      try {
        write_replay_file(replay, replay_of(runs[index].spec, outcome, {0}));
        entry.replay_file = fs::relative(replay, dir).string();
      } catch (const std::exception& failure) {
        std::fprintf(stderr, "verbfault: conform: %s\n", failure.what());
      }
      if (terminal) std::fputs("\r\033[K", stderr);
      std::fprintf(stderr,
                   "verbfault: %s seed %llu does not conform: %s (expected %s): %s\n"
                   "verbfault:   reproduce: %s\n",
                   entry.fault_class.c_str(), static_cast<unsigned long long>(entry.seed),
                   std::string(to_string(entry.outcome)).c_str(),
                   std::string(to_string(entry.expect)).c_str(), entry.reason.c_str(),
                   entry.replay.c_str());
    }
    if (terminal)
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %zu do not conform", done, runs.size(), failing);
  });
  if (terminal) std::fputs("\r\033[K", stderr);
  if (!started) {
    std::fprintf(stderr, "verbfault: conform: fork: %s\n", std::strerror(errno));
    return exit_status::kUsage;
  }
  report.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (report.provider.empty()) report.provider = "no device opened";
  std::map<std::string, std::size_t> reached;
  for (const std::string& window : report.race_windows)
    if (const std::size_t runs = reports::entries_reaching(report, window).size(); runs != 0)
      reached[window] = runs;
  print_race_windows("conform", "run", reached);

  const reports::Summary summary = reports::summarize(report);
  std::fprintf(stderr,
               "verbfault: conform: %zu runs in %.1f s: %zu conform, %zu do not, %zu not "
               "exercised (the fault never fired)\n",
               summary.entries, report.duration_seconds, summary.conforming, summary.not_conforming,
               summary.not_exercised);
  try {
    reports::write_report_files(report, dir);
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "verbfault: conform: %s\n", failure.what());
    return exit_status::kUsage;
  }
  std::fprintf(stderr, "verbfault: report: %s (and report.json, report.xml, report.md)\n",
               (dir / "report.html").c_str());
  return summary.not_conforming == 0 ? 0 : 1;
}

}  // namespace verbfault::cli

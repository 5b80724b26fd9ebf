#include "conform.h"

#include "battery.h"
#include "html_writer.h"
#include "junit_writer.h"
#include "markdown_writer.h"
#include "process.h"
#include "race_windows.h"
#include "replay_file.h"
#include "report_json.h"
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

// How the run ended, from the outside.
reports::Outcome classify(const Outcome& outcome) {
  if (outcome.timed_out) return reports::Outcome::timeout;
  if (outcome.status == exit_status::kUsage || outcome.status == exit_status::kCannotExecute ||
      outcome.status == exit_status::kNotFound)
    return reports::Outcome::error;
  if (outcome.status > 128 && outcome.status < 128 + 65) return reports::Outcome::crash;
  if (outcome.status == exit_status::kHang) return reports::Outcome::hang;
  if (outcome.findings || outcome.status == exit_status::kFindings)
    return reports::Outcome::finding;
  return outcome.status == 0 ? reports::Outcome::success : reports::Outcome::clean_failure;
}

std::string joined(const std::set<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// One line saying why the run came to its outcome.
std::string describe(const Outcome& outcome, reports::Outcome kind, double timeout) {
  std::set<std::string> checks = outcome.checks;
  checks.erase("resource.leak_at_exit");  // reported, not held against a run
  const std::string after = outcome.fired.empty() ? ""
                                                  : " after " + outcome.fired.front().kind +
                                                        " on " + outcome.fired.front().object;
  switch (kind) {
    case reports::Outcome::success:
      return "exit 0" + after;
    case reports::Outcome::clean_failure:
      return "exit " + std::to_string(outcome.status) + after + ", no finding";
    case reports::Outcome::finding:
      return "checks " + joined(checks) + " reported" + after;
    case reports::Outcome::hang:
      return "the harness ended a hang (exit 122)" +
             (checks.empty() ? std::string() : ": checks " + joined(checks)) + after;
    case reports::Outcome::crash:
      return std::string("killed by SIG") + sigabbrev_np(outcome.status - 128) + after;
    case reports::Outcome::timeout:
      return "killed after the " + std::to_string(static_cast<int>(timeout)) + " s timeout" + after;
    case reports::Outcome::error:
      return "exit " + std::to_string(outcome.status) +
             ": the harness could not run it (see its log)";
  }
  return "";
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

// The program's last line of output: what it said as it ended.
std::string last_said(const fs::path& log) {
  std::ifstream in(log);
  std::string said;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.rfind("verbfault:", 0) != 0) said = line;
  if (said.size() > 300) said = said.substr(0, 300) + "...";
  return said;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
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

  // Entry by entry, seed by seed: the report's order.
  std::vector<BatchRun> runs;
  for (const BatteryEntry& entry : battery.entries) {
    for (const std::uint64_t seed : report.seeds) {
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
  std::fprintf(
      stderr,
      "verbfault: conform: %s under the %s battery: %zu fault classes x %u seed%s, %u job%s\n",
      report.application.c_str(), battery.source.c_str(), battery.entries.size(), seeds,
      seeds == 1 ? "" : "s", jobs, jobs == 1 ? "" : "s");

  const bool terminal = isatty(STDERR_FILENO) != 0;
  const auto began = std::chrono::steady_clock::now();
  std::size_t done = 0, failing = 0;
  BatchOptions batch;
  batch.jobs = jobs;
  const bool started = run_batch(runs, batch, [&](std::size_t index, Outcome&& outcome) {
    reports::Entry& entry = report.entries[index];
    const reports::Outcome kind = classify(outcome);
    entry.outcome = kind;
    // A rule that fired where its fault cannot be injected (level
    // "unsupported": docs/fault-kinds.md, "Fault levels") changed nothing
    // the program saw: it does not exercise the entry.
    const bool exercised =
        std::any_of(outcome.fired.begin(), outcome.fired.end(),
                    [](const FiredFault& fired) { return fired.level != "unsupported"; });
    entry.verdict = judge(entry.expect, kind, exercised);
    entry.reason = entry.verdict == Verdict::not_exercised
                       ? "the fault never fired: the run tested nothing"
                       : describe(outcome, kind, options.timeout_seconds);
    entry.exit_status = outcome.status;
    entry.duration_seconds = outcome.seconds;
    entry.checks.assign(outcome.checks.begin(), outcome.checks.end());
    for (const std::string& window : report.race_windows)
      if (outcome.windows.count(window) != 0) entry.windows.push_back(window);
    for (const FiredFault& fired : outcome.fired)
      entry.faults.push_back(
          {fired.kind, fired.rule, fired.object, fired.nth, fired.level, fired.record});
    entry.said = last_said(runs[index].log);
    entry.replay = outcome.reproduce;
    entry.trace_hash = outcome.trace_hash;
    reports::TraceDigest digest = reports::digest_trace(runs[index].trace);
    // A launcher's own trace (mpirun: no verbs call) says nothing: its
    // first rank's does (process_trace_path).
    for (const auto& [process, path] : existing_process_traces(runs[index].trace)) {
      if (digest.records != 0) break;
      digest = reports::digest_trace(path);
    }
    entry.trace_records = digest.records;
    entry.excerpt = std::move(digest.excerpt);
    entry.timeline = std::move(digest.timeline);
    if (report.provider.empty() && !digest.devices.empty()) {
      for (const std::string& device : digest.devices)
        report.provider += (report.provider.empty() ? "" : ", ") + device;
    }
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
                   std::string(to_string(kind)).c_str(),
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
    reports::write_report_json(report, dir / "report.json");
    reports::write_junit_report(report, dir / "report.xml");
    reports::write_markdown_report(report, dir / "report.md");
    reports::write_html_report(report, dir / "report.html");
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "verbfault: conform: %s\n", failure.what());
    return exit_status::kUsage;
  }
  std::fprintf(stderr, "verbfault: report: %s (and report.json, report.xml, report.md)\n",
               (dir / "report.html").c_str());
  return summary.not_conforming == 0 ? 0 : 1;
}

}  // namespace verbfault::cli

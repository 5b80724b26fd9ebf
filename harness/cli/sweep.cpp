#include "sweep.h"

#include "plan_names.h"
#include "report_entry.h"
#include "report_files.h"
#include "process.h"
#include "replay_file.h"
#include "runner.h"
#include "seed_run.h"
#include "swarm.h"
#include "race_windows.h"
#include "verbfault/plan.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <thread>

namespace verbfault::cli {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// The run of one seed, as `verbfault run` is given it: in swarm mode with
// the rules the seed draws from the palette.
SeedRun seed_run(const SweepOptions& options, const std::optional<Palette>& palette,
                 std::uint64_t seed) {
  SeedRun run;
  run.seed = seed;
  if (palette) {
    for (const Rule& rule : palette->draw(seed).rules) run.faults.push_back(to_cli(rule));
  } else {
    run.plan_file = options.plan_file;
    run.faults = options.faults;
  }
  run.threads = options.threads;
  run.library = options.library;
  run.command = options.command;
  run.timeout_seconds = options.timeout_seconds;
  return run;
}

// Marks an entry whose seed never ran (--max-failures stopped the sweep).
constexpr int kNotRun = -1;

// What the sweep's plan is, in one line: the report's "battery", on which
// the shards of one sweep must agree.
std::string plan_description(const SweepOptions& options) {
  std::string text;
  if (options.swarm)
    text = "swarm from " + (options.plan_file ? *options.plan_file : std::string("the default palette"));
  else if (options.plan_file)
    text = "plan " + *options.plan_file;
  for (const std::string& rule : options.swarm ? std::vector<std::string>{} : options.faults)
    text += (text.empty() ? "faults: " : "; ") + rule;
  if (text.empty()) text = "no faults";
  if (options.pass_statuses != std::vector<int>{0}) {
    text += ", pass statuses";
    for (const int status : options.pass_statuses) text += " " + std::to_string(status);
  }
  if (options.threads) text += ", threads " + *options.threads;
  return text;
}

// The report the sweep fills as its seeds end: one fault class ("sweep",
// or "swarm"), one entry per seed of this shard, each expecting what the
// sweep's oracle passes. Throws PlanError when the plan file cannot be read.
reports::Report sweep_report(const SweepOptions& options, bool swarm,
                             const std::vector<BatchRun>& runs) {
  reports::Report report;
  report.mode = "sweep";
  report.application = fs::path(options.command.front()).filename().string();
  report.command = options.command;
  report.battery = plan_description(options);
  for (std::uint64_t seed = options.first_seed; seed >= options.first_seed && seed <= options.last_seed;
       ++seed)
    report.seeds.push_back(seed);
  report.verbfault_version = verbfault_version();
  report.started_at = utc_now();
  report.race_windows = race_window_names();
  report.build = build_identity(options.library);
  const std::string name = swarm ? "swarm" : "sweep";
  report.classes = {name};
  if (options.shard.count > 1)
    report.shard = reports::Report::Shard{options.shard.index, options.shard.count};
  std::vector<std::string> file_rules;
  if (options.plan_file && !swarm)
    for (const Rule& rule : parse_plan_file(*options.plan_file).rules)
      file_rules.push_back(to_cli(rule));
  for (const BatchRun& run : runs) {
    reports::Entry& entry = report.entries.emplace_back();
    entry.fault_class = name;
    entry.seed = run.spec.seed;
    entry.plan = file_rules;
    entry.plan.insert(entry.plan.end(), run.spec.faults.begin(), run.spec.faults.end());
    // The sweep's oracle (seed_run.h): exit 0 alone, or the --pass-status list.
    entry.expect = entry.plan.empty() && !swarm               ? reports::Expectation::success
                   : options.pass_statuses == std::vector<int>{0} ? reports::Expectation::recovery
                                                                 : reports::Expectation::clean_failure;
    entry.exit_status = kNotRun;
  }
  return report;
}

}  // namespace

void parse_seed_range(const std::string& text, SweepOptions& options) {
  const std::size_t dots = text.find("..");
  const std::string first = text.substr(0, dots);
  const std::string last = dots == std::string::npos ? first : text.substr(dots + 2);
  try {
    options.first_seed = parse_seed(first, "--seeds " + text + ": A");
    options.last_seed = parse_seed(last, "--seeds " + text + ": B");
  } catch (const PlanError& error) {
    throw std::invalid_argument(error.what());
  }
  if (options.last_seed < options.first_seed)
    throw std::invalid_argument("--seeds '" + text + "': expected A..B with A <= B");
}

int sweep(const SweepOptions& options) {
  std::optional<Palette> palette;
  if (options.swarm) {
    if (!options.faults.empty()) {
      std::fprintf(stderr,
                   "verbfault: --swarm --fault: expected the swarm's palette as --plan FILE (or "
                   "none: the default palette), not --fault rules\n");
      return exit_status::kUsage;
    }
    try {
      palette = options.plan_file ? Palette::from_file(*options.plan_file) : Palette::standard();
    } catch (const PlanError& error) {
      std::fprintf(stderr, "verbfault: %s\n", error.what());
      return exit_status::kUsage;
    }
  }
  std::vector<std::uint64_t> pending;
  // Every N-th seed from the I-th: the shards of a range partition it.
  for (std::uint64_t seed = options.first_seed + (options.shard.index - 1);
       seed >= options.first_seed && seed <= options.last_seed; seed += options.shard.count)
    pending.push_back(seed);
  const std::size_t total = pending.size();
  const unsigned jobs =
      options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());

  fs::path dir;
  // Without --out the passing runs' files go as each ends, and without
  // --report too the directory itself when no seed failed.
  const bool keep_all = options.out.has_value();
  bool temporary = false;
  std::error_code error;
  if (options.out) {
    dir = *options.out;
    fs::create_directories(dir, error);
  } else if (options.report_dir) {
    dir = fs::path(*options.report_dir) / "runs";
    fs::create_directories(dir, error);
  } else {
    char templ[] = "/tmp/verbfault-sweep-XXXXXX";
    if (mkdtemp(templ) == nullptr) error = std::error_code(errno, std::generic_category());
    dir = templ;
    temporary = true;
  }
  if (error) {
    std::fprintf(stderr, "verbfault: sweep: cannot make the directory '%s': %s\n", dir.c_str(),
                 error.message().c_str());
    return exit_status::kUsage;
  }
  std::fprintf(stderr, "verbfault: sweep: %zu seed%s (%llu..%llu, shard %u/%u), %u job%s%s\n",
               total, total == 1 ? "" : "s", static_cast<unsigned long long>(options.first_seed),
               static_cast<unsigned long long>(options.last_seed), options.shard.index,
               options.shard.count, jobs, jobs == 1 ? "" : "s",
               !palette            ? ""
               : options.plan_file ? (", swarm from " + *options.plan_file).c_str()
                                   : ", swarm from the default palette");

  // Every seed's run, as `verbfault run` is given it (a swarm seed's plan
  // drawn here, once: its replay file gets the same rules).
  std::vector<BatchRun> runs;
  runs.reserve(pending.size());
  for (const std::uint64_t seed : pending)
    runs.push_back({seed_run(options, palette, seed), log_path(dir, seed), trace_path(dir, seed)});
  std::optional<reports::Report> report;
  if (options.report_dir) {
    try {
      report = sweep_report(options, palette.has_value(), runs);
    } catch (const PlanError& failure) {
      std::fprintf(stderr, "verbfault: %s\n", failure.what());
      return exit_status::kUsage;
    }
  }
  std::vector<Outcome> failures;
  std::map<std::string, std::size_t> windows;  // seeds that reached each race window
  std::size_t done = 0;
  const Clock::time_point began = Clock::now();
  const bool terminal = isatty(STDERR_FILENO) != 0;
  auto stop_launching = [&] {
    return options.max_failures != 0 && failures.size() >= options.max_failures;
  };
  BatchOptions batch;
  batch.jobs = jobs;
  batch.pass_statuses = options.pass_statuses;
  batch.stop = stop_launching;
  batch.fork_server = options.fork_server;
  const bool started = run_batch(runs, batch, [&](std::size_t index, Outcome&& outcome) {
    const std::uint64_t seed = runs[index].spec.seed;
    ++done;
    for (const std::string& window : outcome.windows) ++windows[window];
    if (report) {
      reports::Entry& entry = report->entries[index];
      entry.verdict = outcome.failed                              ? reports::Verdict::does_not_conform
                      : !entry.plan.empty() && !exercised(outcome) ? reports::Verdict::not_exercised
                                                                   : reports::Verdict::conforms;
      // The timeline and excerpt of the failures only: a sweep's report
      // of thousands of passing seeds stays small.
      fill_entry(entry, runs[index], outcome, report->race_windows, options.timeout_seconds,
                 /*keep_timeline=*/outcome.failed, report->provider);
    }
    if (outcome.failed) {
      const fs::path replay_file = dir / ("seed-" + std::to_string(seed) + ".replay");
      try {
        write_replay_file(replay_file, replay_of(runs[index].spec, outcome, options.pass_statuses));
        if (report)
          report->entries[index].replay_file =
              fs::relative(replay_file, *options.report_dir).string();
      } catch (const std::exception& error) {
        std::fprintf(stderr, "verbfault: sweep: %s\n", error.what());
      }
      if (terminal) std::fputs("\r\033[K", stderr);
      std::fprintf(stderr,
                   "verbfault: seed %llu failed: %s\nverbfault:   reproduce: %s\n"
                   "verbfault:   replay file: %s\n",
                   static_cast<unsigned long long>(seed), outcome.signature.c_str(),
                   outcome.reproduce.c_str(), replay_file.c_str());
      failures.push_back(std::move(outcome));
    } else if (!keep_all) {
      // Without --out only the failures' files are kept.
      std::error_code ignored;
      fs::remove(log_path(dir, seed), ignored);
      fs::remove(trace_path(dir, seed), ignored);
    }
    if (terminal) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
      const double rate = elapsed > 0 ? done / elapsed : 0;
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %zu failed, %.1f seeds/s, ETA %.0f s", done, total,
                   failures.size(), rate, rate > 0 ? (total - done) / rate : 0.0);
    }
  });
  if (!started) {
    if (terminal) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "verbfault: sweep: fork: %s\n", std::strerror(errno));
    return exit_status::kUsage;
  }
  if (terminal) std::fputs("\r\033[K", stderr);

  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
  std::fprintf(stderr,
               "verbfault: sweep: %zu of %zu seeds run in %.1f s (%.1f seeds/s), %zu failed%s\n",
               done, total, elapsed, elapsed > 0 ? done / elapsed : 0.0, failures.size(),
               stop_launching() && done < total ? " (stopped: --max-failures)" : "");
  // One line per signature: the seeds that failed that way, in order.
  std::map<std::string, std::vector<std::uint64_t>> groups;
  for (const Outcome& failure : failures) groups[failure.signature].push_back(failure.seed);
  for (auto& [signature, seeds] : groups) {
    std::sort(seeds.begin(), seeds.end());
    std::string list;
    for (std::size_t i = 0; i < seeds.size() && i < 10; ++i)
      list += (i == 0 ? "" : " ") + std::to_string(seeds[i]);
    if (seeds.size() > 10) list += " ...";
    std::fprintf(stderr, "verbfault:   %zu seed%s: %s (seeds %s)\n", seeds.size(),
                 seeds.size() == 1 ? "" : "s", signature.c_str(), list.c_str());
  }
  print_race_windows("sweep", "seed", windows);
  if (report) {
    report->duration_seconds = elapsed;
    if (report->provider.empty()) report->provider = "no device opened";
    // A sweep stopped by --max-failures reports the seeds it ran.
    if (done < total) {
      std::erase_if(report->entries,
                    [](const reports::Entry& entry) { return entry.exit_status == kNotRun; });
    }
    const fs::path report_dir = *options.report_dir;
    try {
      reports::write_report_files(*report, report_dir);
    } catch (const std::exception& failure) {
      std::fprintf(stderr, "verbfault: sweep: %s\n", failure.what());
      return exit_status::kUsage;
    }
    std::fprintf(stderr, "verbfault: report: %s (and report.json, report.xml, report.md)\n",
                 (report_dir / "report.html").c_str());
  }
  if (temporary && failures.empty())
    fs::remove_all(dir, error);
  else if (temporary)
    std::fprintf(stderr, "verbfault: sweep: the failed runs' output, traces and replay files: %s\n",
                 dir.c_str());
  return failures.empty() ? 0 : 1;
}

}  // namespace verbfault::cli

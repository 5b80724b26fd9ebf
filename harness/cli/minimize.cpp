#include "minimize.h"

#include "plan_names.h"
#include "process.h"
#include "replay_file.h"
#include "run.h"
#include "runner.h"
#include "seed_run.h"
#include "verbfault/plan.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace verbfault::cli {

namespace fs = std::filesystem;

namespace {

// A candidate: explicit rules, the freedoms, the schedule.
struct Candidate {
  std::vector<Rule> rules;
  bool canonical_freedoms = false;
  std::optional<std::string> threads;
};

class Minimizer {
 public:
  Minimizer(const MinimizeOptions& options, fs::path dir)
      : options_(options), dir_(std::move(dir)) {}

  // The run of the options as given.
  Outcome run_original() {
    SeedRun run = base();
    run.plan_file = options_.plan_file;
    run.faults = options_.faults;
    ++runs_by_step_["original"];
    return counted(run);
  }

  // Whether the candidate fails as the original did; its outcome kept.
  bool fails(const Candidate& candidate, const char* step) {
    const std::string key = key_of(candidate);
    auto cached = cache_.find(key);
    if (cached == cache_.end()) {
      SeedRun run = base();
      for (const Rule& rule : candidate.rules) run.faults.push_back(to_cli(rule));
      if (candidate.canonical_freedoms)
        run.settings.emplace_back("VERBFAULT_FREEDOMS", "canonical");
      run.threads = candidate.threads;
      cached = cache_.emplace(key, counted(run)).first;
      ++runs_by_step_[step];
      const Outcome& outcome = cached->second;
      std::fprintf(stderr, "verbfault: minimize: run %zu (%s): %zu rule%s%s%s: %s\n", runs_, step,
                   candidate.rules.size(), candidate.rules.size() == 1 ? "" : "s",
                   candidate.canonical_freedoms ? ", canonical freedoms" : "",
                   candidate.threads ? (", threads " + *candidate.threads).c_str() : "",
                   keeps(outcome) ? "still fails" : ("no: " + outcome.signature).c_str());
    }
    return keeps(cached->second);
  }
  const Outcome& outcome_of(const Candidate& candidate) const {
    return cache_.at(key_of(candidate));
  }

  void expect(const Outcome& original) { original_ = original; }
  std::size_t runs() const { return runs_; }
  const std::map<std::string, std::size_t>& runs_by_step() const { return runs_by_step_; }

 private:
  SeedRun base() const {
    SeedRun run;
    run.seed = options_.seed;
    run.threads = options_.threads;
    run.settings = options_.settings;
    run.library = options_.library;
    run.command = options_.command;
    run.timeout_seconds = options_.timeout_seconds;
    return run;
  }
  Outcome counted(const SeedRun& run) {
    ++runs_;
    return run_seed(run, dir_, options_.pass_statuses);
  }
  bool keeps(const Outcome& outcome) const {
    return outcome.failed && (!options_.same_signature || outcome.signature == original_.signature);
  }
  static std::string key_of(const Candidate& candidate) {
    std::string key = candidate.canonical_freedoms ? "canonical" : "drawn";
    key += "|" + candidate.threads.value_or("");
    for (const Rule& rule : candidate.rules) key += "|" + to_cli(rule);
    return key;
  }

  const MinimizeOptions& options_;
  fs::path dir_;
  Outcome original_;
  std::map<std::string, Outcome> cache_;
  std::size_t runs_ = 0;
  std::map<std::string, std::size_t> runs_by_step_;
};

// The firings of a run as explicit rules: the rule that fired, on the
// object it counted on, at that opportunity only, in the process it fired
// in (a run of several commands: each counts its own opportunities).
std::vector<Rule> explicit_rules(const Plan& plan, const std::vector<FiredFault>& fired) {
  std::vector<Rule> rules;
  std::set<std::string> seen;
  for (const FiredFault& firing : fired) {
    if (firing.rule >= plan.rules.size() || firing.nth == 0) continue;
    Rule rule = plan.rules[firing.rule];
    rule.selector.object = engine::parse_object(firing.object);
    if (!rule.selector.object) continue;
    rule.trigger = Trigger{Trigger::Kind::nth, firing.nth};
    if (firing.process)
      rule.selector.proc = ProcessRef{static_cast<std::uint32_t>(*firing.process), {}};
    rule.count.reset();
    // One decision can leave more than one record (cause and effect).
    if (seen.insert(to_cli(rule)).second) rules.push_back(std::move(rule));
  }
  return rules;
}

// ddmin over the rules of `candidate`: a 1-minimal subset that still fails.
void ddmin(Minimizer& minimizer, Candidate& candidate) {
  std::size_t n = 2;
  auto with = [&](std::vector<Rule> rules) {
    Candidate c = candidate;
    c.rules = std::move(rules);
    return c;
  };
  while (candidate.rules.size() >= 2) {
    const std::vector<Rule>& items = candidate.rules;
    std::vector<std::vector<Rule>> chunks(n), complements(n);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::size_t chunk = i * n / items.size();
      for (std::size_t c = 0; c < n; ++c)
        (c == chunk ? chunks : complements)[c].push_back(items[i]);
    }
    bool reduced = false;
    for (std::size_t c = 0; c < n && !reduced; ++c) {
      if (!minimizer.fails(with(chunks[c]), "ddmin")) continue;
      candidate.rules = chunks[c];
      n = 2;
      reduced = true;
    }
    for (std::size_t c = 0; c < n && !reduced && n > 2; ++c) {
      if (!minimizer.fails(with(complements[c]), "ddmin")) continue;
      candidate.rules = complements[c];
      n = std::max<std::size_t>(n - 1, 2);
      reduced = true;
    }
    if (reduced) continue;
    if (n >= candidate.rules.size()) break;
    n = std::min(n * 2, candidate.rules.size());
  }
}

// Each rule's trigger down: the earliest opportunity that still fails.
void triggers_down(Minimizer& minimizer, Candidate& candidate) {
  for (Rule& rule : candidate.rules) {
    if (rule.trigger.kind != Trigger::Kind::nth) continue;
    const std::uint64_t nth = rule.trigger.n;
    for (std::uint64_t earlier = 1; earlier < nth && earlier <= 4; ++earlier) {
      rule.trigger.n = earlier;
      if (minimizer.fails(candidate, "trigger")) break;
      rule.trigger.n = nth;
    }
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words)
    line += (line.empty() ? "" : " ") + engine::shell_quote(word);
  return line;
}

}  // namespace

int minimize(const MinimizeOptions& options) {
  Plan plan;
  try {
    plan = read_plan(options.plan_file, options.faults);
  } catch (const PlanError& error) {
    std::fprintf(stderr, "verbfault: %s\n", error.what());
    return exit_status::kUsage;
  }
  fs::path dir;
  try {
    dir = make_temporary_directory("minimize");
  } catch (const fs::filesystem_error& error) {
    std::fprintf(stderr, "verbfault: minimize: %s\n", error.what());
    return exit_status::kUsage;
  }
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{dir};

  Minimizer minimizer(options, dir);
  const Outcome original = minimizer.run_original();
  if (!original.failed) {
    std::fprintf(stderr,
                 "verbfault: minimize: seed %llu does not fail with this plan (%s): nothing to "
                 "minimize\n",
                 static_cast<unsigned long long>(options.seed), original.signature.c_str());
    return 1;
  }
  minimizer.expect(original);
  std::fprintf(stderr, "verbfault: minimize: seed %llu fails: %s; %zu fault%s fired\n",
               static_cast<unsigned long long>(options.seed), original.signature.c_str(),
               original.fired.size(), original.fired.size() == 1 ? "" : "s");

  // 1. The firings as explicit rules. If they do not fail as the original
  // (a fault's effect that depends on a rule that did not fire), the
  // original rules are minimized instead.
  Candidate best;
  best.threads = options.threads;
  best.rules = explicit_rules(plan, original.fired);
  const std::size_t explicit_count = best.rules.size();
  if (!minimizer.fails(best, "explicit")) {
    std::fprintf(stderr,
                 "verbfault: minimize: the fired faults as explicit rules do not fail the same "
                 "way; minimizing the plan's own rules\n");
    best.rules = plan.rules;
    if (!minimizer.fails(best, "plan")) {
      std::fprintf(stderr,
                   "verbfault: minimize: the plan's rules as --fault lines do not fail the same "
                   "way either: the failure does not reproduce\n");
      return 1;
    }
  }
  // 2. ddmin, with the empty plan first (a failure no fault is needed for).
  Candidate none = best;
  none.rules.clear();
  if (!best.rules.empty() && minimizer.fails(none, "no faults")) best = none;
  ddmin(minimizer, best);
  // 3. Triggers down.
  triggers_down(minimizer, best);
  // 4. The canonical freedoms, then the smallest schedule perturbation.
  Candidate canonical = best;
  canonical.canonical_freedoms = true;
  if (minimizer.fails(canonical, "freedoms")) best = canonical;
  if (!options.threads) {
    const std::string base_hash = minimizer.outcome_of(best).trace_hash.value_or("");
    for (const char* threads : {"pct:depth=1", "pct:depth=2"}) {
      Candidate schedule = best;
      schedule.threads = threads;
      if (!minimizer.fails(schedule, "schedule")) continue;
      // The same trace: the program's threads (if any) did not need the
      // perturbation; the default stays.
      if (minimizer.outcome_of(schedule).trace_hash.value_or("") != base_hash) best = schedule;
      break;
    }
  }

  const Outcome& final_outcome = minimizer.outcome_of(best);
  Plan minimal;
  minimal.rules = best.rules;
  std::string header;
  auto counted = [](std::size_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  header += "# Minimized by `verbfault minimize` from seed " + std::to_string(options.seed) + ": " +
            counted(original.fired.size(), "fault") + " fired, " +
            counted(explicit_count, "explicit rule") + ", " + std::to_string(minimal.rules.size()) +
            " left.\n";
  header += "# command: " + joined(options.command) + "\n";
  header += "# seed: " + std::to_string(options.seed);
  if (best.threads) header += ", threads " + *best.threads;
  if (best.canonical_freedoms) header += ", VERBFAULT_FREEDOMS=canonical";
  header += "\n# signature: " + final_outcome.signature + "\n";
  header += "# runs: " + std::to_string(minimizer.runs()) + " (";
  bool first = true;
  for (const auto& [step, count] : minimizer.runs_by_step()) {
    header += (first ? "" : ", ") + step + " " + std::to_string(count);
    first = false;
  }
  header += ")\n";
  const std::string text = header + to_yaml(minimal);

  std::fprintf(stderr, "verbfault: minimize: %zu rule%s left of %zu fired, in %zu runs: %s\n",
               minimal.rules.size(), minimal.rules.size() == 1 ? "" : "s", original.fired.size(),
               minimizer.runs(), final_outcome.signature.c_str());
  if (!options.out) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  const fs::path plan_path = *options.out + ".plan";
  const fs::path replay_path = *options.out + ".replay";
  {
    std::ofstream file(plan_path, std::ios::trunc);
    file << text;
    if (!file) {
      std::fprintf(stderr, "verbfault: minimize: cannot write %s\n", plan_path.c_str());
      return exit_status::kUsage;
    }
  }
  ReplayFile replay;
  replay.verbfault_version = verbfault_version();
  replay.library = binary_of(fs::absolute(options.library).string());
  replay.program = binary_of(resolve_program(options.command.front()));
  replay.command = options.command;
  replay.seed = options.seed;
  replay.threads = best.threads;
  replay.settings = engine::replay_settings();
  for (const engine::Setting& setting : options.settings) {
    std::erase_if(replay.settings,
                  [&](const engine::Setting& s) { return s.first == setting.first; });
    replay.settings.push_back(setting);
  }
  if (best.canonical_freedoms) {
    std::erase_if(replay.settings,
                  [](const engine::Setting& s) { return s.first == "VERBFAULT_FREEDOMS"; });
    replay.settings.emplace_back("VERBFAULT_FREEDOMS", "canonical");
  }
  replay.plan_file = plan_path.filename().string();
  replay.pass_statuses = options.pass_statuses;
  replay.expect.fails = true;
  replay.expect.status = final_outcome.status;
  replay.expect.signature = final_outcome.signature;
  replay.expect.trace_hash = final_outcome.trace_hash;
  try {
    write_replay_file(replay_path, replay);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "verbfault: minimize: %s\n", error.what());
    return exit_status::kUsage;
  }
  std::fprintf(stderr, "verbfault: minimize: wrote %s and %s (verbfault replay %s)\n",
               plan_path.c_str(), replay_path.c_str(), replay_path.c_str());
  return 0;
}

}  // namespace verbfault::cli

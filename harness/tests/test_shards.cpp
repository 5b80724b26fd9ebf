// A run split over machines and joined again: four shards of a 400-seed
// (100 sanitized) swarm sweep of the sample, and of a conformance run of it, merged by
// `verbfault report merge`, are the unsharded run's report (the same
// entries in the same order, the same verdicts, outcomes, faults and trace
// hashes); the shard can come from the CI's environment (GitLab's
// CI_NODE_INDEX/CI_NODE_TOTAL, a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX); merge refuses reports that are not the shards of
// one run, in one line each; conform runs the classes it is told.
#include "report_json.h"
#include "shell.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;
using reports::Entry;
using reports::Report;

class Shards : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("verbfault-test-shards-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  static Report report(const fs::path& dir) {
    std::ifstream in(dir / "report.json");
    std::stringstream text;
    text << in.rdbuf();
    return reports::report_from_json(text.str());
  }
  // verbfault SUBCOMMAND OPTIONS --report DIR -- sample_rc
  ProcessResult verbfault(const std::string& command, const std::string& report,
                          const std::string& env = "") const {
    return run_shell("env " + env + " " + VERBFAULT_CLI + " " + command + " --report " +
                     (dir_ / report).string() + " -- " + SAMPLE_RC);
  }
  ProcessResult merge(const std::string& parts, const std::string& out = "merged") const {
    std::string dirs;
    std::istringstream in(parts);
    for (std::string part; in >> part;) dirs += " " + (dir_ / part).string();
    return run_shell(std::string(VERBFAULT_CLI) + " report merge --out " + (dir_ / out).string() +
                     dirs);
  }

  fs::path dir_;
};

// What a run came to, without what differs between two runs of it (the
// durations, the paths of its files).
auto essence(const Entry& e) {
  std::vector<std::tuple<std::string, std::size_t, std::string, std::uint64_t, std::string>> faults;
  for (const reports::FiredFault& f : e.faults)
    faults.emplace_back(f.kind, f.rule, f.object, f.nth, f.level);
  return std::tuple(e.fault_class, e.seed, e.plan, e.expect, e.outcome, e.verdict, e.reason,
                    e.exit_status, e.checks, e.windows, faults, e.trace_hash, e.trace_records);
}

void expect_same_entries(const Report& whole, const Report& merged) {
  ASSERT_EQ(whole.entries.size(), merged.entries.size());
  for (std::size_t i = 0; i < whole.entries.size(); ++i)
    EXPECT_EQ(essence(whole.entries[i]), essence(merged.entries[i]))
        << "entry " << i << ": " << whole.entries[i].fault_class << " seed "
        << whole.entries[i].seed;
  const reports::Summary a = reports::summarize(whole), b = reports::summarize(merged);
  EXPECT_EQ(std::tie(a.entries, a.conforming, a.not_conforming, a.not_exercised),
            std::tie(b.entries, b.conforming, b.not_conforming, b.not_exercised));
  EXPECT_EQ(whole.command, merged.command);
  EXPECT_EQ(whole.battery, merged.battery);
  EXPECT_EQ(whole.seeds, merged.seeds);
  EXPECT_EQ(whole.classes, merged.classes);
  EXPECT_EQ(whole.build, merged.build);
  EXPECT_EQ(whole.provider, merged.provider);
}

TEST_F(Shards, FourShardsOfASwarmSweepMergeIntoTheUnshardedReport) {
  // Swarm: each seed draws its own plan, so the seeds differ in faults,
  // outcomes and verdicts, and an entry merged into the wrong place shows.
  // 400 seeds, as the CI recipes' sweep; 100 in a sanitized build, where a
  // seed costs several times more (the same checks, a quarter of the runs).
#ifdef VERBFAULT_SANITIZER_RUNTIME
  constexpr int kSeeds = 100;
#else
  constexpr int kSeeds = 400;
#endif
  const std::string seeds = std::to_string(kSeeds);
  const std::string per_shard = std::to_string(kSeeds / 4);
  const std::string sweep = "sweep --swarm --seeds 1.." + seeds + " --jobs 2";
  ProcessResult whole = verbfault(sweep, "whole");
  ASSERT_EQ(whole.status, 1) << "some seeds of the swarm fail the sample: " << whole.output;
  for (int shard = 1; shard <= 4; ++shard) {
    ProcessResult part =
        verbfault(sweep + " --shard " + std::to_string(shard) + "/4", "s" + std::to_string(shard));
    ASSERT_TRUE(part.status == 0 || part.status == 1) << part.output;
    EXPECT_TRUE(contains(part.output, per_shard + " seeds (1.." + seeds + ", shard " +
                                          std::to_string(shard) + "/4)"))
        << part.output;
    const Report shard_report = report(dir_ / ("s" + std::to_string(shard)));
    ASSERT_TRUE(shard_report.shard.has_value());
    EXPECT_EQ(shard_report.shard->index, static_cast<unsigned>(shard));
    EXPECT_EQ(shard_report.entries.size(), static_cast<std::size_t>(kSeeds / 4));
  }
  // The shards in any order: the merge puts the entries back in seed order.
  ProcessResult merged = merge("s3 s1 s4 s2");
  EXPECT_EQ(merged.status, whole.status) << merged.output;
  EXPECT_TRUE(contains(merged.output, "4 reports, " + seeds + " runs:")) << merged.output;
  const Report a = report(dir_ / "whole"), b = report(dir_ / "merged");
  EXPECT_FALSE(b.shard.has_value());
  EXPECT_EQ(a.mode, "sweep");
  EXPECT_EQ(a.classes, std::vector<std::string>{"swarm"});
  expect_same_entries(a, b);
  const reports::Summary summary = reports::summarize(a);
  EXPECT_GT(summary.not_conforming, 0u);
  EXPECT_GT(summary.conforming, 0u);
  // A failure's replay file, relative to the merged report, is the shard's.
  std::size_t replays = 0;
  for (const Entry& entry : b.entries) {
    if (entry.replay_file.empty()) continue;
    ++replays;
    EXPECT_TRUE(fs::exists(dir_ / "merged" / entry.replay_file)) << entry.replay_file;
  }
  EXPECT_EQ(replays, summary.not_conforming);
  for (const char* view : {"report.xml", "report.md", "report.html"})
    EXPECT_TRUE(fs::file_size(dir_ / "merged" / view) > 0) << view;
}

TEST_F(Shards, FourShardsOfAConformRunMergeIntoTheUnshardedReport) {
  const std::string conform = "conform --seeds 2 --jobs 2";
  ProcessResult whole = verbfault(conform, "whole");
  ASSERT_EQ(whole.status, 0) << whole.output;
  std::size_t runs = 0;
  for (int shard = 1; shard <= 4; ++shard) {
    ProcessResult part = verbfault(conform + " --shard " + std::to_string(shard) + "/4",
                                   "s" + std::to_string(shard));
    ASSERT_EQ(part.status, 0) << part.output;
    runs += report(dir_ / ("s" + std::to_string(shard))).entries.size();
  }
  const Report a = report(dir_ / "whole");
  EXPECT_EQ(runs, a.entries.size()) << "the shards partition the runs";
  ProcessResult merged = merge("s1 s2 s3 s4");
  EXPECT_EQ(merged.status, 0) << merged.output;
  expect_same_entries(a, report(dir_ / "merged"));
}

// GitLab's `parallel: N` numbers its jobs CI_NODE_INDEX 1..N of
// CI_NODE_TOTAL; a Kubernetes Indexed Job its pods JOB_COMPLETION_INDEX
// 0..N-1. Either gives the shard --shard I/N gives.
TEST_F(Shards, TheShardComesFromTheCiEnvironment) {
  const std::string sweep = "sweep --seeds 1..12 --fault 'flush p=0.3'";
  ASSERT_LE(verbfault(sweep + " --shard 2/3", "given").status, 1);
  ASSERT_LE(verbfault(sweep + " --shard auto", "gitlab", "CI_NODE_INDEX=2 CI_NODE_TOTAL=3").status,
            1);
  ASSERT_LE(verbfault(sweep + " --shard auto/3", "kubernetes", "JOB_COMPLETION_INDEX=1").status, 1);
  const Report given = report(dir_ / "given");
  ASSERT_EQ(given.entries.size(), 4u);
  for (const char* source : {"gitlab", "kubernetes"}) {
    const Report from_environment = report(dir_ / source);
    ASSERT_TRUE(from_environment.shard.has_value()) << source;
    EXPECT_EQ(*from_environment.shard, *given.shard) << source;
    expect_same_entries(given, from_environment);
  }
}

TEST_F(Shards, ABadShardOrEnvironmentIsOneLine) {
  const std::string sweep = "sweep --seeds 1..12";
  for (const auto& [option, env, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--shard auto", "", "--shard auto: expected CI_NODE_INDEX and CI_NODE_TOTAL"},
           {"--shard auto", "JOB_COMPLETION_INDEX=0", "expected --shard auto/N"},
           {"--shard auto", "CI_NODE_INDEX=4 CI_NODE_TOTAL=3", "CI_NODE_INDEX='4': expected"},
           {"--shard auto/3", "JOB_COMPLETION_INDEX=3", "JOB_COMPLETION_INDEX='3': expected"},
           {"--shard auto/3", "JOB_COMPLETION_INDEX=x", "JOB_COMPLETION_INDEX='x': expected"},
           {"--shard auto/3", "CI_NODE_INDEX=1 CI_NODE_TOTAL=4",
            "CI_NODE_TOTAL='4' says otherwise"},
           {"--shard auto/0", "JOB_COMPLETION_INDEX=0", "--shard 'auto/0': expected I/N"},
       }) {
    ProcessResult r = verbfault(sweep + " " + option, "bad", env);
    EXPECT_EQ(r.status, 125) << option << " " << env << ": " << r.output;
    EXPECT_TRUE(contains(r.output, says)) << option << " " << env << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

TEST_F(Shards, MergeRefusesReportsThatAreNotTheShardsOfOneRun) {
  const std::string sweep = "sweep --seeds 1..8 --fault 'flush p=0.3'";
  for (int shard = 1; shard <= 3; ++shard)
    ASSERT_LE(
        verbfault(sweep + " --shard " + std::to_string(shard) + "/3", "s" + std::to_string(shard))
            .status,
        1);
  ASSERT_LE(verbfault("sweep --seeds 1..8 --fault 'flush p=0.5' --shard 3/3", "other_plan").status,
            1);
  ASSERT_LE(verbfault("sweep --seeds 1..9 --fault 'flush p=0.3' --shard 3/3", "other_seeds").status,
            1);
  ASSERT_LE(verbfault(sweep, "whole").status, 1);
  for (const auto& [parts, says] : std::vector<std::pair<std::string, std::string>>{
           {"s1 s2", "shard 3/3 is missing"},
           {"s1 s2 s3 s3", "shard 3/3 is given twice"},
           {"s1 s2 other_plan", "disagree on the battery"},
           {"s1 s2 other_seeds", "disagree on the seeds"},
           {"s1 s2 s3 whole", "is not a shard"},
           {"whole whole", "is in both"},
           {"s1 nonexistent", "cannot be read"},
       }) {
    ProcessResult r = merge(parts);
    EXPECT_EQ(r.status, 125) << parts << ": " << r.output;
    EXPECT_TRUE(contains(r.output, says)) << parts << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  ProcessResult into_a_part = merge("s1 s2 s3", "s1");
  EXPECT_EQ(into_a_part.status, 125) << into_a_part.output;
  EXPECT_TRUE(contains(into_a_part.output, "is one of the reports merged")) << into_a_part.output;
}

// --list-classes prints the battery's classes; --class runs only those,
// and the report still names them all (a merge of classes run apart puts
// them back in the battery's order).
TEST_F(Shards, ConformRunsTheClassesItIsToldAndMergesThemInBatteryOrder) {
  ProcessResult list = run_shell(std::string(VERBFAULT_CLI) + " conform --list-classes");
  ASSERT_EQ(list.status, 0) << list.output;
  std::vector<std::string> classes;
  std::istringstream in(list.output);
  for (std::string line; std::getline(in, line);) classes.push_back(line);
  ASSERT_GT(classes.size(), 10u) << list.output;
  EXPECT_EQ(classes.front(), "baseline");
  const std::string late = classes[classes.size() - 2], early = classes[1];
  ASSERT_EQ(verbfault("conform --seeds 1 --class " + late, "late").status, 0);
  ASSERT_EQ(verbfault("conform --seeds 1 --class " + early + " --class baseline", "early").status,
            0);
  const Report early_report = report(dir_ / "early");
  EXPECT_EQ(early_report.classes, classes);
  ASSERT_EQ(early_report.entries.size(), 2u);
  ProcessResult merged = merge("late early");
  ASSERT_EQ(merged.status, 0) << merged.output;
  const Report joined = report(dir_ / "merged");
  std::vector<std::string> order;
  for (const Entry& entry : joined.entries) order.push_back(entry.fault_class);
  EXPECT_EQ(order, (std::vector<std::string>{"baseline", early, late}));

  ProcessResult unknown = verbfault("conform --class no_such_class", "unknown");
  EXPECT_EQ(unknown.status, 125) << unknown.output;
  EXPECT_TRUE(contains(unknown.output,
                       "--class 'no_such_class': expected a fault class of the "
                       "default battery: baseline, "))
      << unknown.output;
}

}  // namespace
}  // namespace verbfault::testing

// `verbfault conform` end to end on the sample: the plain program conforms
// (exit 0) and the report is written whole; the buggy one does not (exit
// 1), and what the report says to reproduce a run reproduces it: the
// Markdown's `verbfault run` line fails again the same way, the replay
// file replays; a battery that cannot be read is one line (125); a fault
// that never fires is "not exercised", not a pass or a failure.
#include "report_json.h"
#include "shell.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;
using reports::Report;
using reports::Verdict;

class Conform : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("verbfault-test-conform-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  static std::string read(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // conform OPTIONS --report DIR/report -- sample_rc ARGS
  ProcessResult conform(const std::string& options, const std::string& args = "") const {
    return run_shell(std::string(VERBFAULT_CLI) + " conform " + options + " --report " +
                     report_dir().string() + " -- " + SAMPLE_RC + args);
  }
  fs::path report_dir() const { return dir_ / "report"; }
  Report report() const { return reports::report_from_json(read(report_dir() / "report.json")); }

  fs::path dir_;
};

TEST_F(Conform, TheSampleConformsAndTheReportIsWrittenWhole) {
  ProcessResult r = conform("--seeds 2 --jobs 2");
  ASSERT_EQ(r.status, 0) << r.output;
  // Every class of the default battery (test_battery.cpp counts them) runs
  // under each of the 2 seeds.
  unsigned classes = 0;
  const std::size_t at = r.output.find("under the default battery: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  ASSERT_EQ(std::sscanf(r.output.c_str() + at,
                        "under the default battery: %u fault classes x 2 seeds", &classes),
            1)
      << r.output;
  EXPECT_TRUE(
      contains(r.output, "verbfault: conform: " + std::to_string(classes * 2) + " runs in "))
      << r.output;
  EXPECT_TRUE(contains(r.output, ", 0 do not, ")) << r.output;
  for (const char* file : {"report.json", "report.xml", "report.md", "report.html"})
    EXPECT_GT(fs::file_size(report_dir() / file), 0u) << file;
  const Report report = this->report();
  EXPECT_EQ(report.application, "sample_rc");
  EXPECT_EQ(report.seeds, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(report.provider, "vfsim0 (simulated)");
  ASSERT_EQ(report.entries.size(), classes * 2u);
  for (const reports::Entry& entry : report.entries) {
    EXPECT_NE(entry.verdict, Verdict::does_not_conform)
        << entry.fault_class << " seed " << entry.seed << ": " << entry.reason;
    // Each run's log and trace under runs/; no replay file for a run that conforms.
    const std::string stem = entry.fault_class + "-seed-" + std::to_string(entry.seed);
    EXPECT_TRUE(fs::exists(report_dir() / "runs" / (stem + ".log"))) << stem;
    EXPECT_TRUE(fs::exists(report_dir() / "runs" / (stem + ".jsonl"))) << stem;
    EXPECT_TRUE(entry.replay_file.empty()) << stem;
  }
  EXPECT_EQ(report.entries.front().fault_class, "baseline");
  EXPECT_EQ(report.entries.front().verdict, Verdict::conforms);
  EXPECT_GT(report.entries.front().trace_records, 0u);
  EXPECT_TRUE(contains(read(report_dir() / "report.md"), ":white_check_mark:"));
  // The race windows: every one a run can reach is listed, each entry's
  // are among them, and conform prints how many runs reached each.
  EXPECT_EQ(
      report.race_windows,
      (std::vector<std::string>{"completion_between_poll_and_arm", "event_for_several_completions",
                                "event_with_empty_cq", "channel_wait_during_teardown"}));
  for (const reports::Entry& entry : report.entries)
    for (const std::string& window : entry.windows)
      EXPECT_NE(std::find(report.race_windows.begin(), report.race_windows.end(), window),
                report.race_windows.end())
          << window;
  EXPECT_TRUE(contains(r.output, "verbfault: conform: race windows reached (runs): ")) << r.output;
}

// The reproduce cells of the Markdown's table of runs that do not conform:
// (fault class, seed, the line).
struct Row {
  std::string fault_class;
  std::uint64_t seed = 0;
  std::string reproduce;
};
std::vector<Row> failing_rows(const std::string& md) {
  std::vector<Row> rows;
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0 || !contains(line, " | **")) continue;
    Row row;
    row.fault_class = line.substr(2, line.find(" | ") - 2);
    row.seed = std::stoull(line.substr(line.find(" | ") + 3));
    const std::size_t open = line.rfind("| `"), close = line.rfind("` |");
    if (open != std::string::npos && close != std::string::npos && close > open + 3)
      row.reproduce = line.substr(open + 3, close - open - 3);
    rows.push_back(row);
  }
  return rows;
}

TEST_F(Conform, TheBuggySampleDoesNotConformAndItsRunsReproduce) {
  ProcessResult r = conform("--seeds 1 --jobs 2", " --buggy");
  ASSERT_EQ(r.status, 1) << r.output;
  const Report report = this->report();
  const std::vector<Row> rows = failing_rows(read(report_dir() / "report.md"));
  ASSERT_FALSE(rows.empty());
  std::size_t not_conforming = 0;
  for (const reports::Entry& entry : report.entries)
    not_conforming += entry.verdict == Verdict::does_not_conform;
  EXPECT_EQ(rows.size(), not_conforming);
  for (const Row& row : rows) {
    const reports::Entry* entry = nullptr;
    for (const reports::Entry& candidate : report.entries)
      if (candidate.fault_class == row.fault_class && candidate.seed == row.seed)
        entry = &candidate;
    ASSERT_NE(entry, nullptr) << row.fault_class << " seed " << row.seed;
    EXPECT_EQ(entry->verdict, Verdict::does_not_conform);
    EXPECT_EQ(row.reproduce, entry->replay);
    const std::string prefix = "verbfault run --seed " + std::to_string(row.seed) + " ";
    ASSERT_EQ(row.reproduce.rfind(prefix, 0), 0u) << row.reproduce;
    // The line, run: the same failure.
    ProcessResult again = run_shell(std::string(VERBFAULT_CLI) +
                                    row.reproduce.substr(std::string("verbfault").size()));
    EXPECT_NE(again.status, 0) << row.reproduce;
    EXPECT_EQ(again.status, entry->exit_status) << row.reproduce << "\n" << again.output;
    // The replay file, replayed: reproduced.
    ASSERT_FALSE(entry->replay_file.empty()) << row.fault_class;
    const fs::path replay = report_dir() / entry->replay_file;
    ASSERT_TRUE(fs::exists(replay)) << replay;
    ProcessResult replayed = run_shell(std::string(VERBFAULT_CLI) + " replay " + replay.string());
    EXPECT_EQ(replayed.status, 0) << replay << "\n" << replayed.output;
    EXPECT_TRUE(contains(replayed.output, "verbfault: replay: reproduced")) << replayed.output;
  }
}

TEST_F(Conform, ABatteryThatCannotBeReadIsOneLine) {
  ProcessResult r = conform("--battery /nonexistent-verbfault-dir/battery.yaml");
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_EQ(r.output,
            "verbfault: --battery '/nonexistent-verbfault-dir/battery.yaml': cannot read it "
            "(expected default or a battery file)\n");
  EXPECT_FALSE(fs::exists(report_dir() / "report.json"));
}

TEST_F(Conform, ABadBatteryIsOneLineNamingTheEntry) {
  const fs::path battery = dir_ / "bad.yaml";
  std::ofstream(battery) << "format: 1\nentries:\n  - name: flush\n    fault: flush p=0.2\n"
                            "    expect: success\n";
  ProcessResult r = conform("--battery " + battery.string());
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_TRUE(contains(r.output, battery.string() + ": entries[0] (flush)")) << r.output;
}

TEST_F(Conform, AFaultThatNeverFiresIsNotExercised) {
  // The sample has no qp#9.
  const fs::path battery = dir_ / "never.yaml";
  std::ofstream(battery) << "format: 1\nseeds: 2\nentries:\n"
                            "  - name: baseline\n    expect: success\n"
                            "  - name: nowhere\n    fault: flush qp#9 nth=1\n"
                            "    expect: clean_failure\n";
  ProcessResult r = conform("--jobs 2 --battery " + battery.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "4 runs in ")) << r.output;
  EXPECT_TRUE(contains(r.output, ": 2 conform, 0 do not, 2 not exercised")) << r.output;
  const Report report = this->report();
  EXPECT_EQ(report.battery, battery.string());
  ASSERT_EQ(report.entries.size(), 4u);
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(report.entries[i].fault_class, "nowhere");
    EXPECT_EQ(report.entries[i].verdict, Verdict::not_exercised);
    EXPECT_TRUE(report.entries[i].faults.empty());
    EXPECT_EQ(report.entries[i].reason, "the fault never fired: the run tested nothing");
  }
  const std::string md = read(report_dir() / "report.md");
  EXPECT_TRUE(contains(md,
                       "Not exercised (the fault never fired, so the run tested nothing): "
                       "nowhere seed 1, nowhere seed 2."))
      << md;
  EXPECT_TRUE(contains(read(report_dir() / "report.xml"), "<skipped message=")) << md;
}

// A launcher's ranks (a shell standing for mpirun: two samples with
// OMPI_COMM_WORLD_RANK) trace to files of their own: the faults that fired
// there count, and the report names their device, not the launcher's none.
TEST_F(Conform, TheRanksOfALauncherAreWhereItsFaultsFire) {
  const fs::path battery = dir_ / "ranks.yaml";
  std::ofstream(battery) << "format: 1\nseeds: 1\nentries:\n"
                            "  - name: baseline\n    expect: success\n"
                            "  - name: no_pd\n    fault: verb_failure(alloc_pd,ENOMEM) nth=1\n"
                            "    expect: clean_failure\n";
  const std::string sample = SAMPLE_RC;
  const std::string ranks = "'OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 " + sample +
                            " & a=$!; OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 " + sample +
                            "; b=$?; wait $a; exit $(($? | b))'";
  ProcessResult r =
      run_shell(std::string(VERBFAULT_CLI) + " conform --jobs 1 --battery " + battery.string() +
                " --report " + report_dir().string() + " -- sh -c " + ranks);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, ": 2 conform, 0 do not, 0 not exercised")) << r.output;
  const Report report = this->report();
  EXPECT_TRUE(contains(report.provider, "vfsim0")) << report.provider;
  ASSERT_EQ(report.entries.size(), 2u);
  EXPECT_FALSE(report.entries[1].faults.empty()) << "the ranks' faults were not read";
}

}  // namespace
}  // namespace verbfault::testing

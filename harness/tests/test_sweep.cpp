// `verbfault sweep` end to end on field failure F10: the buggy program
// (a lost wakeup some seeds expose, no fault injected) and its fixed
// version; the shards of a range partition it; --max-failures stops it;
// bad ranges and shards are one-line usage errors.
#include "shell.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

namespace verbfault::testing {
namespace {

std::string sweep(const std::string& options, const char* variant) {
  return std::string(VERBFAULT_CLI) + " sweep " + options + " -- " + FIELD_FAILURE_PROGRAMS_DIR +
         "/field_failure_F10 " + variant;
}

// The seeds of "verbfault: seed S failed:" lines.
std::set<int> failed_seeds(const std::string& output) {
  std::set<int> seeds;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("verbfault: seed ", 0) == 0 && line.find(" failed: ") != std::string::npos)
      seeds.insert(std::stoi(line.substr(16)));
  return seeds;
}

TEST(Sweep, FindsTheBuggyProgramsSeedsAndGroupsThemBySignature) {
  ProcessResult r = run_shell(sweep("--seeds 1..20 --jobs 2", "buggy"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: sweep: 20 of 20 seeds run in ")) << r.output;
  const std::set<int> seeds = failed_seeds(r.output);
  EXPECT_FALSE(seeds.empty()) << r.output;
  EXPECT_LT(seeds.size(), 20u) << "some interleavings miss the window: " << r.output;
  // Each failure: its signature and the line that reproduces it.
  EXPECT_TRUE(contains(r.output, "failed: exit 122, checks liveness.blocked_forever")) << r.output;
  EXPECT_TRUE(contains(r.output, "no fault fired")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault:   reproduce: verbfault run --seed ")) << r.output;
  EXPECT_TRUE(contains(r.output, " failed\n")) << r.output;
}

TEST(Sweep, TheFixedProgramPassesEverySeed) {
  ProcessResult r = run_shell(sweep("--seeds 1..20", "fixed"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "20 of 20 seeds run in")) << r.output;
  EXPECT_TRUE(contains(r.output, ", 0 failed\n")) << r.output;
}

// The race windows (record/window.h): a sweep says how many seeds reached
// each. A client in an event loop whose peer thinks before answering
// reaches the stranded window (and handles it: the fixed client); F09's
// fixed program, which wakes its progress thread before joining it, is
// joined by some seeds while that thread still waits in ibv_get_cq_event
// (the teardown window); a program whose threads only busy-poll never
// waits for an event, and the sweep says no seed reached any window.
TEST(Sweep, ItCountsTheSeedsThatReachedEachRaceWindow) {
  ProcessResult events = run_shell(std::string(VERBFAULT_CLI) + " sweep --seeds 1..20 -- " +
                                   THINK_TIME_RACES + " stranded fixed");
  EXPECT_EQ(events.status, 0) << events.output;
  const std::size_t at = events.output.find(
      "verbfault: sweep: race windows reached (seeds): completion_between_poll_and_arm ");
  ASSERT_NE(at, std::string::npos) << events.output;
  const int seeds = std::stoi(events.output.substr(at + 80));
  EXPECT_GE(seeds, 1) << events.output;
  EXPECT_LE(seeds, 20) << events.output;
  ProcessResult teardown = run_shell(std::string(VERBFAULT_CLI) + " sweep --seeds 1..20 -- " +
                                     FIELD_FAILURE_PROGRAMS_DIR + "/field_failure_F09 fixed");
  EXPECT_EQ(teardown.status, 0) << teardown.output;
  const std::size_t joined = teardown.output.find("channel_wait_during_teardown ");
  ASSERT_NE(joined, std::string::npos) << teardown.output;
  EXPECT_GE(std::stoi(teardown.output.substr(joined + 29)), 1) << teardown.output;
  ProcessResult polling = run_shell(std::string(VERBFAULT_CLI) + " sweep --seeds 1..5 -- " +
                                    POLLING_SERVER + " 20 0 progress");
  EXPECT_EQ(polling.status, 0) << polling.output;
  EXPECT_TRUE(contains(polling.output, "verbfault: sweep: race windows reached (seeds): none\n"))
      << polling.output;
  EXPECT_TRUE(contains(polling.output,
                       "verbfault: sweep: race windows no seed reached: "
                       "completion_between_poll_and_arm, event_for_several_completions, "
                       "event_with_empty_cq, channel_wait_during_teardown\n"))
      << polling.output;
}

TEST(Sweep, TheShardsOfARangeAreItsPartition) {
  const std::set<int> whole = failed_seeds(run_shell(sweep("--seeds 1..30", "buggy")).output);
  std::set<int> joined;
  std::size_t runs = 0;
  for (int i = 1; i <= 3; ++i) {
    ProcessResult r =
        run_shell(sweep("--seeds 1..30 --shard " + std::to_string(i) + "/3", "buggy"));
    EXPECT_TRUE(contains(r.output, "10 of 10 seeds run in")) << r.output;
    for (int seed : failed_seeds(r.output)) {
      EXPECT_EQ((seed - 1) % 3, i - 1) << "seed " << seed << " in shard " << i;
      joined.insert(seed);
    }
    runs += 10;
  }
  EXPECT_EQ(runs, 30u);
  EXPECT_EQ(joined, whole);
}

TEST(Sweep, MaxFailuresStopsStartingRuns) {
  ProcessResult r = run_shell(sweep("--seeds 1..100 --jobs 1 --max-failures 2", "buggy"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(failed_seeds(r.output).size(), 2u) << r.output;
  EXPECT_TRUE(contains(r.output, "(stopped: --max-failures)")) << r.output;
}

TEST(Sweep, ARunPastItsTimeoutIsKilledAndReportedAsATimeout) {
  // Blocked in the kernel where nothing the harness sees can end it.
  ProcessResult r = run_shell(std::string(VERBFAULT_CLI) +
                              " sweep --seeds 1..2 --timeout 0.3 -- tail -f /dev/null");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault:   2 seeds: timeout, no fault fired (seeds 1 2)"))
      << r.output;
}

TEST(Sweep, OnATerminalAProgressLineIsRewrittenInPlace) {
  // script(1) gives the sweep a pseudo-terminal for its stderr.
  ProcessResult r =
      run_shell("script -qfec \"" + sweep("--seeds 1..20 --jobs 2", "buggy") + "\" /dev/null");
  EXPECT_EQ(r.status, 1) << r.output;
  // "[done/total] F failed, R seeds/s, ETA S s", each over the last.
  EXPECT_TRUE(contains(r.output, "\r\033[K[20/20] ")) << r.output;
  for (const char* part : {"\r\033[K[1/20] ", " failed, ", " seeds/s, ETA "})
    EXPECT_TRUE(contains(r.output, part)) << part << "\n" << r.output;
  // Plain lines when not on a terminal.
  ProcessResult plain = run_shell(sweep("--seeds 1..4", "buggy"));
  EXPECT_FALSE(contains(plain.output, "\033[K")) << plain.output;
  EXPECT_FALSE(contains(plain.output, "seeds/s, ETA")) << plain.output;
}

TEST(Sweep, BadRangesAndShardsAreUsageErrors) {
  for (const char* bad :
       {"--seeds 5..2", "--seeds x..3", "--seeds 1..3 --shard 4/3", "--seeds 1..3 --shard 0/3",
        "--seeds 1..3 --shard 1-3", "--seeds 1..3 --jobs 0"}) {
    ProcessResult r = run_shell(sweep(bad, "fixed"));
    EXPECT_EQ(r.status, 125) << bad << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "seeds run in")) << bad << "\n" << r.output;
  }
}

}  // namespace
}  // namespace verbfault::testing

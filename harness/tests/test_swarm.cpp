// Swarm mode: each seed draws which fault kinds are enabled and at what
// rates from a palette (the default one or a file with ranges and
// choices); the drawn plans differ across seeds and are a pure function of
// the seed; every run prints the plan it drew; bad palettes are one line.
#include "shell.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;

std::string cli() {
  return VERBFAULT_CLI;
}

std::string drawn(int seed, const std::string& palette = "") {
  ProcessResult r = run_shell(cli() + " swarm --seed " + std::to_string(seed) +
                              (palette.empty() ? "" : " --palette " + palette));
  EXPECT_EQ(r.status, 0) << r.output;
  return r.output;
}

TEST(Swarm, TheDrawnPlansDifferAcrossSeedsAndAreAFunctionOfTheSeed) {
  std::set<std::string> plans;
  std::set<std::string> kinds;
  for (int seed = 1; seed <= 30; ++seed) {
    const std::string plan = drawn(seed);
    EXPECT_EQ(plan, drawn(seed)) << "seed " << seed;
    EXPECT_TRUE(contains(plan, "rules:\n  - kind: ")) << plan;
    plans.insert(plan);
    std::istringstream in(plan);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("  - kind: ", 0) == 0) kinds.insert(line.substr(10));
  }
  EXPECT_EQ(plans.size(), 30u);
  // Over 30 seeds every kind of the default palette but the rarest shows.
  for (const char* kind : {"cq_overflow", "flush", "rnr_retry_exhausted", "retry_exhausted",
                           "completion_error", "spurious_cq_event", "coalesce_cq_event",
                           "partial_poll", "delayed_completion", "async_event", "verb_failure",
                           "cm_addr_error", "cm_reject", "cm_connect_error",
                           "cm_timewait_exit_missing"})
    EXPECT_EQ(kinds.count(kind), 1u) << kind;
  EXPECT_EQ(kinds.count("drop_cq_event"), 0u) << "not in the default palette";
}

class SwarmFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("verbfault-test-swarm-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const char* name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  fs::path dir_;
};

TEST_F(SwarmFiles, APaletteFileGivesRangesAndChoices) {
  const fs::path palette = write("palette.yaml",
                                 "enable: 1\n"
                                 "rules:\n"
                                 "  - kind: completion_error\n"
                                 "    status: [rem_access_err, rem_op_err]\n"
                                 "    probability: [0.01, 0.1]\n"
                                 "    count: 1\n"
                                 "  - kind: delayed_completion\n"
                                 "    polls: [2, 3]\n"
                                 "    window: [1, 5]\n"
                                 "    enable: 0\n");
  std::set<std::string> statuses, polls;
  for (int seed = 1; seed <= 40; ++seed) {
    const std::string plan = drawn(seed, palette.string());
    // enable 0: never drawn, unless as the one rule every plan has.
    EXPECT_FALSE(contains(plan, "delayed_completion")) << plan;
    const std::size_t status = plan.find("status: ");
    ASSERT_NE(status, std::string::npos) << plan;
    statuses.insert(plan.substr(status + 8, plan.find('\n', status) - status - 8));
    const std::size_t p = plan.find("probability: ");
    ASSERT_NE(p, std::string::npos) << plan;
    const double rate = std::stod(plan.substr(p + 13));
    EXPECT_GE(rate, 0.01) << plan;
    EXPECT_LE(rate, 0.1) << plan;
  }
  EXPECT_EQ(statuses, (std::set<std::string>{"rem_access_err", "rem_op_err"}));
}

TEST_F(SwarmFiles, EveryRunPrintsThePlanItDrewAndAFailureReplaysAsSeedAndRules) {
  // The sample reports an injected error cleanly (exit 1): as a failure
  // here, so that each failed seed leaves its replay file.
  ProcessResult r = run_shell(cli() + " sweep --seeds 1..12 --swarm --jobs 2 --out " +
                              dir_.string() + " -- " + SAMPLE_RC);
  EXPECT_TRUE(contains(r.output, "swarm from the default palette")) << r.output;
  std::set<std::string> plans;
  for (int seed = 1; seed <= 12; ++seed) {
    std::ifstream log(dir_ / ("seed-" + std::to_string(seed) + ".log"));
    std::string plan;
    for (std::string line; std::getline(log, line);)
      if (line.rfind("verbfault: plan: ", 0) == 0 || line.rfind("verbfault:   #", 0) == 0)
        plan += line + "\n";
    EXPECT_TRUE(contains(plan, "verbfault:   #0 ")) << "seed " << seed << ": " << plan;
    plans.insert(plan);
  }
  EXPECT_GE(plans.size(), 11u);
  ASSERT_EQ(r.status, 1) << "some mixes make the sample report a failure: " << r.output;
  // The reproduce line of a failure is an ordinary run: the seed and the
  // rules it drew.
  EXPECT_TRUE(contains(r.output, "verbfault:   reproduce: verbfault run --seed ")) << r.output;
  EXPECT_TRUE(contains(r.output, " --fault '")) << r.output;
  fs::path replay;
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.path().extension() == ".replay") replay = entry.path();
  ASSERT_FALSE(replay.empty());
  ProcessResult again = run_shell(cli() + " replay " + replay.string());
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_TRUE(contains(again.output, "reproduced: the failure and the trace hash")) << again.output;
}

TEST(Swarm, TheSampleSurvivesEveryMixOfTheDefaultPalette) {
  // A correct program completes or reports the injected failure cleanly
  // (exit 1) under every mix: no check, no hang, no crash.
  ProcessResult r =
      run_shell(cli() + " sweep --seeds 1..100 --swarm --pass-status 0,1 -- " + SAMPLE_RC);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "100 of 100 seeds run in")) << r.output;
}

TEST_F(SwarmFiles, BadPalettesAreOneLineUsageErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {"rules: []\n", "expected a swarm palette"},
      {"rules:\n  - kind: flush\nrate: 3\n", "unknown key 'rate'"},
      {"rules:\n  - kind: flush\n    probability: [0.5, 0.1]\n", "with A <= B"},
      {"rules:\n  - kind: flood\n", "rule 0: "},
      {"rules:\n  - kind: completion_error\n    status: [rem_access_err, bogus]\n", "rule 0: "},
      {"enable: 2\nrules:\n  - kind: flush\n", "'enable': expected a probability in [0, 1]"},
  };
  for (const auto& [text, expected] : cases) {
    const fs::path palette = write("bad.yaml", text);
    for (const std::string& command :
         {cli() + " swarm --seed 1 --palette " + palette.string(),
          cli() + " sweep --seeds 1..2 --swarm --plan " + palette.string() + " -- true"}) {
      ProcessResult r = run_shell(command);
      EXPECT_EQ(r.status, 125) << text << r.output;
      EXPECT_TRUE(contains(r.output, "verbfault: " + palette.string())) << r.output;
      EXPECT_TRUE(contains(r.output, expected)) << expected << "\n" << r.output;
      EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    }
  }
  ProcessResult r =
      run_shell(cli() + " sweep --seeds 1..2 --swarm --fault 'flush qp#0 nth=1' -- true");
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "--swarm --fault: expected the swarm's palette as --plan FILE"))
      << r.output;
}

}  // namespace
}  // namespace verbfault::testing

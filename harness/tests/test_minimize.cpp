// `verbfault minimize` end to end, on resend_loop (a transfer loop whose
// one bug is resending with the byte_len of an error completion): from a
// swarm failure where many faults fired, it reaches a one- or two-rule
// plan; the plan still fails under `verbfault run`, its replay file
// reproduces, and its header says where it came from.
#include "findings_file.h"
#include "shell.h"
#include "verbfault/matchers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::Each;
using ::testing::Field;
using ::testing::Not;
using ::testing::StartsWith;

std::string cli() {
  return VERBFAULT_CLI;
}

std::string read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

class Minimize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("verbfault-test-minimize-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    // The swarm finds the bug; the failed seed with the most fired faults
    // is the one to shrink.
    ProcessResult r = run_shell(cli() + " sweep --seeds 1..40 --swarm --pass-status 0,1 --out " +
                                dir_.string() + " -- " + RESEND_LOOP + " buggy");
    ASSERT_EQ(r.status, 1) << r.output;
    std::size_t most = 0;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().extension() != ".replay") continue;
      fs::path trace = entry.path();
      trace.replace_extension(".jsonl");
      const std::size_t fired = count_of(read(trace), "\"fault\":\"");
      if (fired > most) {
        most = fired;
        replay_ = entry.path();
      }
    }
    fired_ = most;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static fs::path dir_, replay_;
  static std::size_t fired_;
};
fs::path Minimize::dir_, Minimize::replay_;
std::size_t Minimize::fired_ = 0;

TEST_F(Minimize, ASwarmFailureWithManyFaultsShrinksToOneRuleThatStillFailsAndReplays) {
  ASSERT_GE(fired_, 5u) << "a swarm failure with 5 or more fired faults";
  const fs::path stem = dir_ / "minimal";
  ProcessResult r = run_shell(cli() + " minimize --replay " + replay_.string() +
                              " --signature any --out " + stem.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string plan = read(stem.string() + ".plan");
  EXPECT_EQ(count_of(plan, "  - kind: "), 1u) << plan;
  EXPECT_EQ(count_of(plan, "    nth: "), 1u) << "an explicit rule: " << plan;
  EXPECT_FALSE(contains(plan, "probability")) << plan;
  // The header: where it came from, the signature and the runs it took.
  EXPECT_TRUE(contains(plan, "# Minimized by `verbfault minimize` from seed ")) << plan;
  EXPECT_TRUE(contains(plan, " faults fired, ")) << plan;
  EXPECT_TRUE(contains(plan, std::string("# command: ") + RESEND_LOOP + " buggy")) << plan;
  EXPECT_TRUE(contains(plan, "# signature: exit 1, checks error.poisoned_field_used")) << plan;
  EXPECT_TRUE(contains(plan, "# runs: ")) << plan;
  EXPECT_TRUE(contains(r.output, "1 rule left of " + std::to_string(fired_) + " fired, in "))
      << r.output;

  // Still fails as an ordinary run of its seed and plan ...
  const std::string seed = read(replay_).substr(read(replay_).find("seed: ") + 6);
  const std::string findings = scratch_findings_path();
  std::string run = cli() + " run --findings " + findings + " --seed " +
                    seed.substr(0, seed.find('\n')) + " --plan " + stem.string() + ".plan -- " +
                    RESEND_LOOP + " buggy";
  if (contains(plan, "VERBFAULT_FREEDOMS=canonical")) run = "VERBFAULT_FREEDOMS=canonical " + run;
  ProcessResult again = run_shell(run);
  EXPECT_EQ(again.status, 1) << again.output;
  EXPECT_THAT(findings_in(findings), Contains(FindingOf("error.poisoned_field_used")))
      << again.output;
  // ... and its replay file reproduces the failure and the trace hash.
  ProcessResult replay = run_shell(cli() + " replay " + stem.string() + ".replay");
  EXPECT_EQ(replay.status, 0) << replay.output;
  EXPECT_TRUE(contains(replay.output, "reproduced: the failure and the trace hash"))
      << replay.output;
  // The fixed program passes under the minimal plan (it reports the error).
  ProcessResult fixed = run_shell(run.substr(0, run.rfind(" buggy")) + " fixed");
  EXPECT_EQ(fixed.status, 1) << fixed.output;
  EXPECT_THAT(findings_in(findings), Each(Field(&Finding::check, Not(StartsWith("error.")))))
      << fixed.output;
  std::remove(findings.c_str());
}

TEST_F(Minimize, KeepingTheWholeSignatureKeepsAtMostTheFirstFaultBesideTheCause) {
  ProcessResult r = run_shell(cli() + " minimize --replay " + replay_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::size_t rules = count_of(r.output, "  - kind: ");
  EXPECT_GE(rules, 1u) << r.output;
  EXPECT_LE(rules, 2u) << r.output;
  // The signature is the original one, first fault included.
  const std::string original = r.output.substr(r.output.find(" fails: ") + 8);
  const std::string signature = original.substr(0, original.find("; "));
  EXPECT_TRUE(contains(r.output, "# signature: " + signature + "\n")) << r.output;
}

TEST(MinimizeInput, APassingRunHasNothingToMinimize) {
  ProcessResult r = run_shell(cli() + " minimize --seed 1 --fault 'partial_poll p=0.5' -- " +
                              RESEND_LOOP + " buggy 8");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: minimize: seed 1 does not fail with this plan (exit "
                       "0, first fault partial_poll): nothing to minimize"))
      << r.output;
}

TEST(MinimizeInput, BadOptionsAreUsageErrors) {
  for (const std::string& bad : {std::string(" minimize --seed 1 --signature maybe -- true"),
                                 std::string(" minimize --fault 'flush qp#0 nth=1' -- true"),
                                 std::string(" minimize --seed x -- true"),
                                 std::string(" minimize --seed 1 --fault 'flood qp#0' -- true"),
                                 std::string(" minimize --seed 1 --fault 'flush qp#0 nth=1'")}) {
    ProcessResult r = run_shell(cli() + bad);
    EXPECT_EQ(r.status, 125) << bad << "\n" << r.output;
  }
}

}  // namespace
}  // namespace verbfault::testing

// `verbfault replay` end to end: a sweep leaves a replay file per failed
// seed; replaying it reproduces the failure and the trace hash, twice the
// same; a rebuilt program is named as the reason the trace differs, not
// reported as a flake; the same build giving another trace is
// nondeterminism (124); a bad replay file is one line (125).
#include "shell.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;

class ReplayFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("verbfault-test-replay-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string cli() const { return VERBFAULT_CLI; }
  std::string replay(const fs::path& file) { return cli() + " replay " + file.string(); }
  static std::string read(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

  fs::path dir_;
};

// The sample under `flush qp#1 p=0.3` reports the flushed completion and
// exits 1 on seeds 1..3.
TEST_F(ReplayFiles, ASweepWritesAReplayFileThatReproducesTheFailureAndItsTraceHash) {
  ProcessResult sweep = run_shell(cli() + " sweep --seeds 1..3 --jobs 2 --out " + dir_.string() +
                                  " --fault 'flush qp#1 p=0.3' -- " + SAMPLE_RC);
  ASSERT_EQ(sweep.status, 1) << sweep.output;
  const fs::path file = dir_ / "seed-2.replay";
  ASSERT_TRUE(fs::exists(file)) << sweep.output;
  EXPECT_TRUE(contains(sweep.output, "verbfault:   replay file: " + file.string())) << sweep.output;
  const std::string text = read(file);
  for (const char* field :
       {"verbfault: ", "library: {file: ", "program: {file: ", "command: [", "seed: 2",
        "flush qp#1 p=0.3", "outcome: fails", "status: 1",
        "signature: \"exit 1, checks resource.leak_at_exit, first fault flush\"", "trace_hash: "})
    EXPECT_TRUE(contains(text, field)) << field << "\n" << text;

  ProcessResult first = run_shell(replay(file));
  ProcessResult second = run_shell(replay(file));
  EXPECT_EQ(first.status, 0) << first.output;
  EXPECT_TRUE(
      contains(first.output, "verbfault: replay: reproduced: the failure and the trace hash"))
      << first.output;
  EXPECT_EQ(second.status, 0) << second.output;
  // The recorded hash, and the same in both runs.
  const std::string recorded = text.substr(text.find("trace_hash: ") + 12, 16);
  EXPECT_TRUE(contains(first.output, "trace hash " + recorded)) << first.output;
  EXPECT_EQ(trace_hash_of(first.output), trace_hash_of(second.output));
  EXPECT_FALSE(trace_hash_of(first.output).empty());
}

TEST_F(ReplayFiles, ARebuiltProgramIsNamedAsTheReasonTheTraceDiffers) {
  const fs::path program = dir_ / "sample_rc";
  fs::copy_file(SAMPLE_RC, program);
  ProcessResult sweep = run_shell(cli() + " sweep --seeds 1..1 --out " + dir_.string() +
                                  " --fault 'flush qp#1 p=0.3' -- " + program.string());
  ASSERT_EQ(sweep.status, 1) << sweep.output;
  // "Rebuild" it: other bytes, and a recorded trace hash this build does not give.
  std::ofstream(program, std::ios::app) << '\n';
  std::string text = read(dir_ / "seed-1.replay");
  text = std::regex_replace(text, std::regex("trace_hash: [0-9a-f]{16}"),
                            "trace_hash: 0123456789abcdef");
  write(dir_ / "seed-1.replay", text);
  ProcessResult r = run_shell(replay(dir_ / "seed-1.replay"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: replay: not the recorded build: another build of the "
                       "program " +
                           program.string()))
      << r.output;
  EXPECT_TRUE(contains(r.output, "the trace hash differs")) << r.output;
  EXPECT_TRUE(contains(r.output, "recorded 0123456789abcdef) as another build may make it"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "NOT DETERMINISTIC")) << r.output;
}

TEST_F(ReplayFiles, TheSameBuildGivingAnotherTraceIsNondeterminism) {
  ProcessResult sweep = run_shell(cli() + " sweep --seeds 1..1 --out " + dir_.string() +
                                  " --fault 'flush qp#1 p=0.3' -- " + SAMPLE_RC);
  ASSERT_EQ(sweep.status, 1) << sweep.output;
  std::string text = read(dir_ / "seed-1.replay");
  write(dir_ / "seed-1.replay", std::regex_replace(text, std::regex("trace_hash: [0-9a-f]{16}"),
                                                   "trace_hash: 0123456789abcdef"));
  ProcessResult r = run_shell(replay(dir_ / "seed-1.replay"));
  EXPECT_EQ(r.status, 124) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: replay: NOT DETERMINISTIC: the same build gave trace "
                       "hash "))
      << r.output;
}

TEST_F(ReplayFiles, AFailureThatNoLongerHappensIsNotReproduced) {
  // The file says the program fails; the plan is emptied, so it passes.
  ProcessResult sweep = run_shell(cli() + " sweep --seeds 1..1 --out " + dir_.string() +
                                  " --fault 'flush qp#1 p=0.3' -- " + SAMPLE_RC);
  ASSERT_EQ(sweep.status, 1) << sweep.output;
  std::string text = read(dir_ / "seed-1.replay");
  text = std::regex_replace(text, std::regex("faults:\n  - flush qp#1 p=0.3\n"), "");
  write(dir_ / "seed-1.replay", text);
  ProcessResult r = run_shell(replay(dir_ / "seed-1.replay"));
  EXPECT_EQ(r.status, 124) << r.output;  // the same build: this is not the recorded run
  EXPECT_TRUE(contains(r.output, "verbfault: replay: passed: exit 0, no fault fired")) << r.output;
  EXPECT_TRUE(contains(r.output, "the same build was expected to fail with: exit 1")) << r.output;
}

TEST_F(ReplayFiles, BadReplayFilesAreOneLineUsageErrors) {
  const fs::path file = dir_ / "bad.replay";
  const std::pair<const char*, const char*> cases[] = {
      {"seed: [", "not YAML"},
      {"- a list", "expected a replay file (a YAML map)"},
      {"format: 1\nverbfault: 0.1.0\nbogus: 3\n", "unknown key 'bogus'"},
      {"format: 1\nverbfault: 0.1.0\nlibrary: {file: a, hash: b}\nprogram: {file: a, hash: b}\n"
       "command: [x]\nseed: nine\nexpect: {outcome: fails, status: 1}\n",
       "expected a 64-bit unsigned seed"},
      {"format: 1\nverbfault: 0.1.0\nlibrary: {file: a, hash: b}\nprogram: {file: a, hash: b}\n"
       "command: [x]\nseed: 9\nfaults: [\"flush qp#1 nth=zero\"]\nexpect: {outcome: fails, "
       "status: 1}\n",
       "nth"},
      {"format: 1\nverbfault: 0.1.0\nlibrary: {file: a, hash: b}\nprogram: {file: a, hash: b}\n"
       "command: [x]\nseed: 9\nexpect: {outcome: maybe, status: 1}\n",
       "outcome 'maybe': expected fails or passes"},
  };
  for (const auto& [text, expected] : cases) {
    write(file, text);
    ProcessResult r = run_shell(replay(file));
    EXPECT_EQ(r.status, 125) << text << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "verbfault: " + file.string())) << r.output;
    EXPECT_TRUE(contains(r.output, expected)) << expected << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  ProcessResult missing = run_shell(replay(dir_ / "none.replay"));
  EXPECT_EQ(missing.status, 125) << missing.output;
  EXPECT_TRUE(contains(missing.output, "cannot read the replay file")) << missing.output;
}

}  // namespace
}  // namespace verbfault::testing

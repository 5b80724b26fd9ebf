// The one builder of replay lines (engine/plan/replay.h): every knob of a
// run on the line, each word quoted so that a shell reads it back.
#include "replay.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace verbfault::engine {
namespace {

TEST(Replay, ShellQuoteLeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("./sample_rc"), "./sample_rc");
  EXPECT_EQ(shell_quote("flush qp#0 nth=3"), "'flush qp#0 nth=3'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(Replay, EnvironmentLineHasSeedPlanSettingsAndCommand) {
  Replay replay;
  replay.seed = 42;
  replay.plan_file = "/plans/a b.yaml";
  replay.rules = parse_rules("flush qp#0 nth=3; partial_poll p=0.5", "test").rules;
  replay.settings = {{"VERBFAULT_FREEDOMS", "canonical"}, {"VERBFAULT_CHECKS", "-resource.*"}};
  replay.command = {"./app", "--peer", "host 1"};
  EXPECT_EQ(environment_line(replay),
            "VERBFAULT_SEED=42 VERBFAULT_PLAN='/plans/a b.yaml' "
            "VERBFAULT_FAULTS='flush qp#0 nth=3; partial_poll p=0.5' "
            "VERBFAULT_FREEDOMS=canonical VERBFAULT_CHECKS='-resource.*' ./app --peer 'host 1'");
  EXPECT_EQ(run_line(replay),
            "VERBFAULT_FREEDOMS=canonical VERBFAULT_CHECKS='-resource.*' verbfault run --seed 42 "
            "--plan '/plans/a b.yaml' --fault 'flush qp#0 nth=3' --fault 'partial_poll p=0.5' "
            "-- ./app --peer 'host 1'");
}

TEST(Replay, SettingsComeFromTheEnvironmentInAFixedOrder) {
  ::setenv("VERBFAULT_SIM_DEVICES", "2", 1);
  ::setenv("VERBFAULT_SIM_PROFILE", "vfsim1=roce", 1);
  ::setenv("VERBFAULT_FREEDOMS", "canonical", 1);
  ::unsetenv("VERBFAULT_CHECKS");
  ::unsetenv("VERBFAULT_DESTROY_CQ_UNACKED");
  // What proc=N rules match (a process started by hand into a fabric).
  ::setenv("VERBFAULT_PROC", "1", 1);
  const std::vector<Setting> expected = {{"VERBFAULT_FREEDOMS", "canonical"},
                                         {"VERBFAULT_SIM_DEVICES", "2"},
                                         {"VERBFAULT_SIM_PROFILE", "vfsim1=roce"},
                                         {"VERBFAULT_PROC", "1"}};
  EXPECT_EQ(replay_settings(), expected);
  ::unsetenv("VERBFAULT_SIM_DEVICES");
  ::unsetenv("VERBFAULT_SIM_PROFILE");
  ::unsetenv("VERBFAULT_FREEDOMS");
  ::unsetenv("VERBFAULT_PROC");
  EXPECT_TRUE(replay_settings().empty());
}

}  // namespace
}  // namespace verbfault::engine

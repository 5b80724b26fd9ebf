// Bad input to verbfault, table by table: each bad option, variable, plan
// or library is one line "verbfault: ..." naming the input and what was
// expected, exit status 125, and the program is not run (or, when only the
// program itself can tell, its status is not passed off as a result).
#include "shell.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

// The lines of `output` that verbfault wrote about the input (not its
// run's own lines: seed, plan, reproduce).
std::vector<std::string> error_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("verbfault: ", 0) != 0 || line.rfind("verbfault: seed ", 0) == 0 ||
        line.rfind("verbfault: plan: ", 0) == 0 || line.rfind("verbfault:   #", 0) == 0 ||
        line.rfind("verbfault: reproduce: ", 0) == 0)
      continue;
    lines.push_back(line);
  }
  return lines;
}

struct BadInput {
  std::string command;  // a shell command line
  std::string line;     // the one line expected (all of it)
};

// Each: status 125, exactly the expected line of verbfault's, and no
// program that passed.
void expect_one_line(const std::vector<BadInput>& table) {
  for (const BadInput& bad : table) {
    ProcessResult r = run_shell(bad.command);
    EXPECT_EQ(r.status, 125) << bad.command << "\n" << r.output;
    std::vector<std::string> lines = error_lines(r.output);
    std::erase_if(lines,
                  [](const std::string& line) { return line.rfind("ERROR: ld.so:", 0) == 0; });
    ASSERT_EQ(lines.size(), 1u) << bad.command << "\n" << r.output;
    EXPECT_EQ(lines[0], bad.line) << bad.command;
    EXPECT_FALSE(contains(r.output, ": OK\n")) << bad.command << "\n" << r.output;
  }
}

const std::string kRun = std::string(VERBFAULT_CLI) + " run --seed 1 ";
const std::string kSample = std::string(" -- ") + SAMPLE_RC;

TEST(InputErrors, ALibraryThatCannotBeTheHarnessIsOneLineAnd125) {
  expect_one_line({
      {kRun + "--library /nonexistent.so" + kSample,
       "verbfault: --library '/nonexistent.so': no such file: expected the harness library "
       "libverbfault.so"},
      {kRun + "--library /" + kSample,
       "verbfault: --library '/': is a directory: expected the harness library libverbfault.so"},
      {"VERBFAULT_LIBRARY=/nonexistent.so " + std::string(VERBFAULT_CLI) + " run" + kSample,
       "verbfault: VERBFAULT_LIBRARY '/nonexistent.so': no such file: expected the harness "
       "library libverbfault.so"},
      // ld.so cannot preload it and runs the program anyway.
      {kRun + "--library /etc/hostname" + kSample,
       "verbfault: sample_rc: the harness did not start in it (LD_PRELOAD=" +
           preload_of("/etc/hostname") +
           " was "
           "ignored: a statically linked or setuid program, or a library that does not load or is "
           "not libverbfault.so); its exit 1 is no result"},
  });
}

// ld.so ignores LD_PRELOAD in a statically linked program (Debian's
// ldconfig is one): the harness never runs in it.
TEST(InputErrors, AStaticProgramThatIgnoresTheHarnessFailsTheRun) {
  ProcessResult r = run_shell(kRun + "-- /sbin/ldconfig --version");
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: ldconfig: the harness did not start in it"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "its exit 0 is no result")) << r.output;
}

TEST(InputErrors, AHarnessedProgramPassesAsBefore) {
  ProcessResult r = run_shell(kRun + kSample);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "did not start")) << r.output;
}

// A file for the plan tables.
std::string plan_file(const std::string& name, const std::string& text) {
  const std::string path =
      ::testing::TempDir() + "verbfault_input_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(InputErrors, SeedsAreDigitsOrHexEverywhereAndNeverEmpty) {
  const std::string env = "env LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) + " ";
  const std::string seed = ": expected a 64-bit unsigned seed (decimal or 0x hex)";
  expect_one_line({
      {std::string(VERBFAULT_CLI) + " run --seed ''" + kSample, "verbfault: --seed=''" + seed},
      {std::string(VERBFAULT_CLI) + " run --seed ' 5'" + kSample, "verbfault: --seed=' 5'" + seed},
      {std::string(VERBFAULT_CLI) + " run --seed '5 '" + kSample, "verbfault: --seed='5 '" + seed},
      {std::string(VERBFAULT_CLI) + " run --seed -1" + kSample, "verbfault: --seed='-1'" + seed},
      {std::string(VERBFAULT_CLI) + " swarm --seed ''", "verbfault: --seed=''" + seed},
      {std::string(VERBFAULT_CLI) + " minimize --seed '' --fault flush" + kSample,
       "verbfault: --seed=''" + seed},
      {env + "VERBFAULT_SEED= " + SAMPLE_RC, "verbfault: VERBFAULT_SEED=''" + seed},
      {env + "VERBFAULT_SEED=' 5' " + SAMPLE_RC, "verbfault: VERBFAULT_SEED=' 5'" + seed},
      {env + "VERBFAULT_SEED='5 ' " + SAMPLE_RC, "verbfault: VERBFAULT_SEED='5 '" + seed},
  });
}

// CLI11's own errors, each kind: one line with the prefix, pointing at help.
TEST(InputErrors, OptionErrorsAreOneLineForEveryKind) {
  const std::string v = std::string(VERBFAULT_CLI) + " ";
  const std::string existing = plan_file("exists.yaml", "rules: []\n");
  expect_one_line({
      {v + "run --bogus" + kSample,
       "verbfault: --bogus: unknown option (see verbfault run --help)"},
      {v + "run extra" + kSample,
       "verbfault: extra: unexpected argument (the program to run goes after --) (see verbfault "
       "run --help)"},
      {v + "run --seed", "verbfault: --seed: expected a value (see verbfault run --help)"},
      {v + "run --timeout abc" + kSample,
       "verbfault: --timeout: 'abc': expected seconds, a number > 0 (see verbfault run --help)"},
      {v + "run --timeout 0" + kSample,
       "verbfault: --timeout: '0': expected seconds, a number > 0 (see verbfault run --help)"},
      {v + "run --peer-grace -1" + kSample,
       "verbfault: --peer-grace: '-1': expected seconds, a number >= 0 (see verbfault run --help)"},
      {v + "run --start-wait ' 5'" + kSample,
       "verbfault: --start-wait ' 5': expected seconds, a number >= 0 (0: start every command at "
       "once)"},
      {v + "run --plan /nonexistent.yaml" + kSample,
       "verbfault: --plan: '/nonexistent.yaml': No such file or directory: expected an existing "
       "file (see verbfault run --help)"},
      {v + "run --plan /" + kSample,
       "verbfault: --plan: '/': is a directory: expected a file (see verbfault run --help)"},
      {v + "sweep" + kSample, "verbfault: --seeds is required (see verbfault sweep --help)"},
      {v + "sweep --seeds 1..2 --jobs 0" + kSample,
       "verbfault: --jobs: '0': expected a whole number 1..1024 (see verbfault sweep --help)"},
      {v + "sweep --seeds 1..2 --max-failures x" + kSample,
       "verbfault: --max-failures: 'x': expected a whole number 1..4294967295 (see verbfault "
       "sweep --help)"},
      {v + "sweep --seeds 1..2 --pass-status 0,300" + kSample,
       "verbfault: --pass-status: '300': expected a whole number 0..255 (see verbfault sweep "
       "--help)"},
      {v + "conform --seeds 0" + kSample,
       "verbfault: --seeds: '0': expected a whole number 1..10000 (see verbfault conform "
       "--help)"},
      {v + "minimize --seed 1 --replay " + existing,
       "verbfault: --seed excludes --replay (see verbfault minimize --help)"},
      {v,
       "verbfault: expected a command: run, sweep, minimize, replay, conform, swarm, plan, "
       "trace or provider-report (see verbfault --help)"},
  });
  std::remove(existing.c_str());
}

TEST(InputErrors, PlanFilesAndVerbfaultPlanNameWhatIsWrong) {
  const std::string two = plan_file("two.yaml", "rules: []\n---\nrules:\n  - kind: flush\n");
  const std::string env = "env LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) + " VERBFAULT_SEED=1 ";
  const std::string dir = ::testing::TempDir();
  expect_one_line({
      {std::string(VERBFAULT_CLI) + " plan " + two,
       "verbfault: " + two +
           ":3: a second YAML document: expected one plan ('rules:' once, no "
           "'---' after it)"},
      {std::string(VERBFAULT_CLI) + " plan " + dir,
       "verbfault: " + dir + ": is a directory: expected a plan file"},
      {env + "VERBFAULT_PLAN=" + two + " " + SAMPLE_RC,
       "verbfault: VERBFAULT_PLAN='" + two + "': " + two +
           ":3: a second YAML document: expected one plan ('rules:' once, no '---' after it)"},
      {env + "VERBFAULT_PLAN=/nonexistent.yaml " + SAMPLE_RC,
       "verbfault: VERBFAULT_PLAN='/nonexistent.yaml': /nonexistent.yaml: cannot open: No such "
       "file or directory: expected a plan file"},
      {env + "VERBFAULT_PLAN=" + dir + " " + SAMPLE_RC,
       "verbfault: VERBFAULT_PLAN='" + dir + "': " + dir +
           ": is a directory: expected a plan file"},
  });
  std::remove(two.c_str());
}

// Every VERBFAULT_* variable the harness reads: empty or malformed is one
// line naming it, before main.
TEST(InputErrors, EveryVariableRefusesABadValueInOneLine) {
  const std::string env = "env LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) + " VERBFAULT_SEED=1 ";
  auto with = [&](const std::string& setting) { return env + setting + " " + SAMPLE_RC; };
  expect_one_line({
      {with("VERBFAULT_FAULTS="),
       "verbfault: VERBFAULT_FAULTS='': expected rules in the one-line form, separated by ';'"},
      {with("VERBFAULT_TRACE="), "verbfault: VERBFAULT_TRACE='': expected a file path"},
      {with("VERBFAULT_FINDINGS="), "verbfault: VERBFAULT_FINDINGS='': expected a file path"},
      {with("VERBFAULT_SUMMARY="), "verbfault: VERBFAULT_SUMMARY='': expected a file path"},
      {with("VERBFAULT_STARTED="), "verbfault: VERBFAULT_STARTED='': expected a file path"},
      {with("VERBFAULT_FREEDOMS="),
       "verbfault: VERBFAULT_FREEDOMS='': expected 'drawn' or 'canonical'"},
      {with("VERBFAULT_PROC="), "verbfault: VERBFAULT_PROC='': expected a member index 0..63"},
      {with("VERBFAULT_PROC=0x1"),
       "verbfault: VERBFAULT_PROC='0x1': expected a member index 0..63"},
      {with("VERBFAULT_PROC=' 1'"),
       "verbfault: VERBFAULT_PROC=' 1': expected a member index 0..63"},
      {with("VERBFAULT_THREADS=pct:depth=x"),
       "verbfault: VERBFAULT_THREADS='pct:depth=x': pct depth must be a decimal number, not 'x'"},
      {with("VERBFAULT_FABRIC_SIZE=abc"),
       "verbfault: VERBFAULT_FABRIC_SIZE='abc': expected a number of processes 1..64"},
      {with("VERBFAULT_FABRIC_SIZE="),
       "verbfault: VERBFAULT_FABRIC_SIZE='': expected a number of processes 1..64"},
      {with("VERBFAULT_FABRIC=a/b"),
       "verbfault: VERBFAULT_FABRIC='a/b': expected a fabric name of 1 to 64 characters from "
       "[A-Za-z0-9._-]"},
      {with("VERBFAULT_CM_LEVEL=kernel"),
       "verbfault: VERBFAULT_CM_LEVEL='kernel': expected cause (the simulated connection manager "
       "makes each cm_* fault) or effect (it is run as a kernel's, its faults made at effect "
       "level)"},
      {std::string(VERBFAULT_CLI) + " run --threads pct:depth=x" + kSample,
       "verbfault: --threads 'pct:depth=x': pct depth must be a decimal number, not 'x'"},
  });
}

// A port the simulated device does not have: known once a rule fires on
// it, then one line and 125 (it was ~128 warnings and a passing run).
TEST(InputErrors, APortTheDeviceDoesNotHaveIsOneLineAnd125) {
  expect_one_line({
      {kRun + "--fault 'port_down(9)'" + kSample,
       "verbfault: rule #0 (port_down(9)): the simulated device of context#0 has no port 9: "
       "expected port=1"},
  });
}

}  // namespace
}  // namespace verbfault::testing

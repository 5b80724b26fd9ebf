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
       "verbfault: sample_rc: the harness did not start in it (LD_PRELOAD=/etc/hostname was "
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

}  // namespace
}  // namespace verbfault::testing

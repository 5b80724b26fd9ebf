// The catalogue of field failures (scenarios/field_failures/F01_flush_lost ... F22_...,
// README.md there): for each directory found at run time, its expect.yaml
// says what a sweep over its seeds under its plan.yaml must find:
//   * `verbfault sweep --seeds A..B --jobs 2 --plan plan.yaml --
//     field_failure_FNN buggy` fails (exit status 1), every failing seed with
//     one of the expected exit statuses and, when expect.yaml names a check,
//     at least one of them with that check;
//   * the same sweep over `fixed` passes every seed (exit status 0).
#include "shell.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;

// One directory's expect.yaml.
struct Expectation {
  std::string id;                 // F01
  fs::path directory;             // .../scenarios/field_failures/F01_flush_lost
  std::string title;              // what went wrong
  std::string reported;           // where it was reported
  std::vector<int> buggy_status;  // `verbfault run` statuses a failing seed may have
  std::string buggy_check;        // a check at least one failing seed reports, or ""
  std::vector<int> fixed_status;  // 0
  std::string seeds;              // "A..B"
};

std::ostream& operator<<(std::ostream& out, const Expectation& e) {
  return out << e.id;
}

std::vector<int> statuses(const YAML::Node& node) {
  std::vector<int> out;
  for (const YAML::Node& status : node) out.push_back(status.as<int>());
  return out;
}

Expectation read_expectation(const fs::path& directory) {
  const YAML::Node doc = YAML::LoadFile((directory / "expect.yaml").string());
  Expectation e;
  e.directory = directory;
  e.id = doc["id"].as<std::string>();
  e.title = doc["title"].as<std::string>();
  e.reported = doc["reported"].as<std::string>();
  e.buggy_status = statuses(doc["buggy"]["status"]);
  if (doc["buggy"]["check"]) e.buggy_check = doc["buggy"]["check"].as<std::string>();
  e.fixed_status = statuses(doc["fixed"]["status"]);
  e.seeds = doc["seeds"].as<std::string>();
  return e;
}

// The directory's id: F01 of F01_flush_lost.
std::string id_of(const fs::path& directory) {
  return directory.filename().string().substr(0, 3);
}

// The FNN_<what goes wrong> directories of scenarios/field_failures, in order.
std::vector<fs::path> field_failure_directories() {
  std::vector<fs::path> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(FIELD_FAILURES_SOURCE_DIR)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && std::regex_match(name, std::regex("F[0-9][0-9]_[a-z0-9_]+")))
      found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<Expectation> catalogue() {
  std::vector<Expectation> all;
  for (const fs::path& directory : field_failure_directories())
    all.push_back(read_expectation(directory));
  return all;
}

// How a sweep's signature begins for a `verbfault run` exit status: "exit
// N", or "signal NAME" for a death by signal N - 128.
std::string signature_of(int status) {
  if (status > 128 && status < 128 + 65) return std::string("signal ") + sigabbrev_np(status - 128);
  return "exit " + std::to_string(status);
}

// The signatures of the "verbfault: seed S failed: SIGNATURE" lines.
std::vector<std::string> failure_signatures(const std::string& output) {
  std::vector<std::string> signatures;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    const std::size_t at = line.find(" failed: ");
    if (line.rfind("verbfault: seed ", 0) == 0 && at != std::string::npos)
      signatures.push_back(line.substr(at + 9));
  }
  return signatures;
}

class FieldFailureCatalog : public ::testing::TestWithParam<Expectation> {
 protected:
  static ProcessResult sweep(const char* variant) {
    const Expectation& e = GetParam();
    return run_shell(std::string(VERBFAULT_CLI) + " sweep --seeds " + e.seeds +
                     " --jobs 2 --plan " + (e.directory / "plan.yaml").string() + " -- " +
                     FIELD_FAILURE_PROGRAMS_DIR + "/field_failure_" + e.id + " " + variant);
  }
};

TEST_P(FieldFailureCatalog, ItsFilesDescribeIt) {
  const Expectation& e = GetParam();
  EXPECT_EQ(e.id, id_of(e.directory));
  EXPECT_FALSE(e.title.empty());
  EXPECT_FALSE(e.reported.empty());
  EXPECT_FALSE(e.buggy_status.empty());
  EXPECT_EQ(std::count(e.buggy_status.begin(), e.buggy_status.end(), 0), 0)
      << "the buggy program must fail";
  EXPECT_EQ(e.fixed_status, std::vector<int>{0});
  EXPECT_TRUE(std::regex_match(e.seeds, std::regex("[0-9]+\\.\\.[0-9]+"))) << e.seeds;
  EXPECT_TRUE(fs::exists(e.directory / "program.cpp"));
  EXPECT_TRUE(fs::exists(std::string(FIELD_FAILURE_PROGRAMS_DIR) + "/field_failure_" + e.id));
  ProcessResult plan =
      run_shell(std::string(VERBFAULT_CLI) + " plan " + (e.directory / "plan.yaml").string());
  EXPECT_EQ(plan.status, 0) << plan.output;
}

TEST_P(FieldFailureCatalog, TheSweepFindsTheBuggyProgram) {
  const Expectation& e = GetParam();
  ProcessResult r = sweep("buggy");
  EXPECT_EQ(r.status, 1) << r.output;
  const std::vector<std::string> signatures = failure_signatures(r.output);
  ASSERT_FALSE(signatures.empty()) << "no seed in " << e.seeds << " failed\n" << r.output;
  bool checked = e.buggy_check.empty();
  for (const std::string& signature : signatures) {
    const bool expected_status = std::any_of(
        e.buggy_status.begin(), e.buggy_status.end(),
        [&](int status) { return signature.rfind(signature_of(status) + ",", 0) == 0; });
    EXPECT_TRUE(expected_status) << "unexpected signature: " << signature << "\n" << r.output;
    const std::size_t checks = signature.find(", checks ");
    if (checks != std::string::npos) {
      const std::size_t from = checks + 9;
      const std::string list = signature.substr(from, signature.find(", ", from) - from) + ",";
      checked = checked || contains(list, e.buggy_check + ",");
    }
  }
  EXPECT_TRUE(checked) << "no failing seed reported " << e.buggy_check << "\n" << r.output;
}

TEST_P(FieldFailureCatalog, TheSweepPassesTheFixedProgram) {
  ProcessResult r = sweep("fixed");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, ", 0 failed\n")) << r.output;
  EXPECT_FALSE(contains(r.output, "verbfault: check ")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(FieldFailures, FieldFailureCatalog, ::testing::ValuesIn(catalogue()),
                         [](const ::testing::TestParamInfo<Expectation>& info) {
                           return info.param.id;
                         });

// shared/field-failures.md lists F01 ... F18, issue 33 the connection
// manager's F19 ... F22: each has its directory.
TEST(FieldFailureCatalogue, EveryFieldFailureHasADirectory) {
  std::vector<std::string> ids;
  for (const fs::path& directory : field_failure_directories())
    ids.push_back(id_of(directory));
  std::vector<std::string> expected;
  for (int i = 1; i <= 22; ++i) expected.push_back((i < 10 ? "F0" : "F") + std::to_string(i));
  EXPECT_EQ(ids, expected);
}

}  // namespace
}  // namespace verbfault::testing

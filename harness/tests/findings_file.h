// The findings `verbfault run --findings FILE` kept (JSON Lines, one
// finding a line), read back as the Session API's verbfault::Finding: the
// tests match them with verbfault/matchers.h (FindingOf, FindingOn)
// instead of reading the words of stderr, which pass forever once a
// message is reworded.
#pragma once

#include "verbfault/session.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace verbfault::testing {

// A findings file of its own for one run of this test process (removed
// first, so that a missing file reads as no finding).
inline std::string scratch_findings_path() {
  static std::atomic<int> made{0};
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("verbfault-test-" + std::to_string(getpid()) + "-" + std::to_string(made++) + ".findings");
  std::filesystem::remove(path);
  return path.string();
}

// Every finding of the file, in the order they were made; `fails_run`
// false ones (resource.leak_at_exit) included unless `failing_only`.
inline std::vector<Finding> findings_in(const std::string& path, bool failing_only = false) {
  std::vector<Finding> found;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json json = nlohmann::json::parse(line);
    if (failing_only && !json.at("fails_run").get<bool>()) continue;
    Finding finding;
    finding.check = json.at("check").get<std::string>();
    finding.object = json.at("object").get<std::string>();
    finding.message = json.at("message").get<std::string>();
    finding.trace_position = json.at("trace_position").get<std::uint64_t>();
    finding.replay = json.at("replay").get<std::string>();
    found.push_back(std::move(finding));
  }
  return found;
}

// findings_in(path), the file removed after.
inline std::vector<Finding> take_findings(const std::string& path) {
  std::vector<Finding> found = findings_in(path);
  std::filesystem::remove(path);
  return found;
}

}  // namespace verbfault::testing

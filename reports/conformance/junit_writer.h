// The conformance report as JUnit XML, the format every CI system reads
// (Jenkins, GitLab, GitHub actions' reporters, Azure): one <testsuite> per
// fault class, one <testcase> per seed; a run that does not conform is a
// <failure> whose text is the replay line, one whose fault never fired is
// <skipped>. reports/schema/junit.xsd says what the output holds to, and
// the tests check it with xmllint.
#pragma once

#include "report.h"

#include <filesystem>
#include <string>

namespace verbfault::reports {

std::string junit_report(const Report& report);

// Throws std::runtime_error naming the path when it cannot be written.
void write_junit_report(const Report& report, const std::filesystem::path& path);

}  // namespace verbfault::reports

// The conformance report as Markdown for a pull-request comment: a summary
// line, then a table of the runs that do not conform (each with the line
// that reproduces it), then the matrix of fault classes by outcome in a
// collapsed block. GitHub / GitLab flavoured (tables, <details>).
#pragma once

#include "report.h"

#include <filesystem>
#include <string>

namespace verbfault::reports {

std::string markdown_report(const Report& report);

// Throws std::runtime_error naming the path when it cannot be written.
void write_markdown_report(const Report& report, const std::filesystem::path& path);

}  // namespace verbfault::reports

// The report's files, all written from one Report: DIR/report.json (the
// data), report.xml (JUnit), report.md (a pull-request comment) and
// report.html (the page). conform, sweep --report and report merge each
// write them here.
#pragma once

#include "report.h"

#include <filesystem>

namespace verbfault::reports {

// Writes the four files into `dir` (which must exist); throws
// std::runtime_error naming the file that cannot be written.
void write_report_files(const Report& report, const std::filesystem::path& dir);

}  // namespace verbfault::reports

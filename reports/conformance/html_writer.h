// The conformance report as one self-contained HTML page: a header with
// the run's facts and verdict counts, the matrix (fault class x outcome,
// html_matrix.h), the entries that do not conform, and a detail panel
// that shows the selected entry (its replay line, fired faults, trace
// excerpt, and its run's timeline drawn in SVG). The stylesheet, the script
// and the data are inline; a Content-Security-Policy forbids every request,
// so the page opens the same from a CI artifact, a mail or an offline disk.
#pragma once

#include "report.h"

#include <filesystem>
#include <string>

namespace verbfault::reports {

// The page. The same report gives the same bytes (nothing is taken from
// the clock or the environment).
std::string html_report(const Report& report);

// Writes html_report(report) to `path` (replacing it); throws
// std::runtime_error naming the path when it cannot be written completely.
void write_html_report(const Report& report, const std::filesystem::path& path);

}  // namespace verbfault::reports

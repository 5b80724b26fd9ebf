// The conformance report's JSON form, as reports/schema/conformance-report.schema.json
// specifies it: written by `verbfault conform` (report.json), read back by
// tools and by the tests. Keys keep the model's order, so the same report
// is the same bytes.
#pragma once

#include "report.h"

#include <filesystem>
#include <stdexcept>
#include <string>

namespace verbfault::reports {

// A JSON document that is not a conformance report of a version this build
// reads; what() names the field and what was expected.
class ReportFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The report as JSON text (indented by two, ending in a newline).
std::string report_json(const Report& report);

// Parses report_json's output; throws ReportFormatError.
Report report_from_json(const std::string& text);

// Writes report_json(report) to `path`; throws std::runtime_error naming
// the path when it cannot be written completely.
void write_report_json(const Report& report, const std::filesystem::path& path);

}  // namespace verbfault::reports

// The provider report as JSON (reports/schema/provider-report.schema.json):
// written by the probe, read back by `verbfault provider-report` (to write
// the Markdown, to compare with a committed report).
#pragma once

#include "provider_report.h"

#include <stdexcept>
#include <string>

namespace verbfault::provider_report {

// A document that is not a provider report of a version this reader knows:
// what is wrong, in one line.
class ReportFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

nlohmann::json to_json(const Check& check);
nlohmann::json to_json(const ProviderReport& report);
// Two-space indented, one trailing newline: the committed files' form.
std::string to_json_text(const ProviderReport& report);
// One check as one compact line with its newline (the probe's stream).
std::string to_json_line(const Check& check);

Check check_from_json(const nlohmann::json& document);
ProviderReport from_json(const nlohmann::json& document);
ProviderReport read_report_file(const std::string& path);

}  // namespace verbfault::provider_report

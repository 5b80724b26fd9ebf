#include "provider_report_json.h"

#include <fstream>
#include <sstream>

namespace verbfault::provider_report {

namespace {

using nlohmann::json;

const json& member(const json& object, const char* key, const char* where) {
  const auto it = object.find(key);
  if (it == object.end()) throw ReportFormatError(std::string(where) + ": missing \"" + key + "\"");
  return *it;
}

std::string text(const json& object, const char* key, const char* where) {
  const json& value = member(object, key, where);
  if (!value.is_string())
    throw ReportFormatError(std::string(where) + ": \"" + key + "\" is not a string");
  return value.get<std::string>();
}

std::string optional_text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

unsigned optional_unsigned(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_unsigned() ? it->get<unsigned>() : 0u;
}

}  // namespace

json to_json(const Check& check) {
  json out = {{"id", check.id},
              {"title", check.title},
              {"spec", check.spec},
              {"expected", check.expected},
              {"observed", check.observed},
              {"value", check.value},
              {"verdict", name(check.verdict)}};
  if (!check.note.empty()) out["note"] = check.note;
  return out;
}

json to_json(const ProviderReport& report) {
  json checks = json::array();
  for (const Check& check : report.checks) checks.push_back(to_json(check));
  const ProviderInfo& p = report.provider;
  return {{"format", kFormat},
          {"version", kVersion},
          {"generator", report.generator},
          {"provider",
           {{"device", p.device},
            {"node_type", p.node_type},
            {"link_layer", p.link_layer},
            {"fw_ver", p.fw_ver},
            {"vendor_id", p.vendor_id},
            {"vendor_part_id", p.vendor_part_id},
            {"hw_ver", p.hw_ver},
            {"kernel", p.kernel}}},
          {"summary",
           {{"checks", report.checks.size()},
            {"conforms", report.count(Verdict::conforms)},
            {"deviates", report.count(Verdict::deviates)},
            {"unsupported", report.count(Verdict::unsupported)},
            {"inconclusive", report.count(Verdict::inconclusive)}}},
          {"checks", std::move(checks)}};
}

std::string to_json_text(const ProviderReport& report) {
  return to_json(report).dump(2) + "\n";
}

std::string to_json_line(const Check& check) {
  return to_json(check).dump() + "\n";
}

Check check_from_json(const json& document) {
  if (!document.is_object()) throw ReportFormatError("a check is not an object");
  Check check;
  check.id = text(document, "id", "check");
  const std::string where = "check " + check.id;
  check.title = text(document, "title", where.c_str());
  check.spec = text(document, "spec", where.c_str());
  check.expected = text(document, "expected", where.c_str());
  check.observed = text(document, "observed", where.c_str());
  check.value = member(document, "value", where.c_str());
  const std::string verdict = text(document, "verdict", where.c_str());
  const std::optional<Verdict> parsed = verdict_from_name(verdict);
  if (!parsed) throw ReportFormatError(where + ": unknown verdict \"" + verdict + "\"");
  check.verdict = *parsed;
  check.note = optional_text(document, "note");
  return check;
}

ProviderReport from_json(const json& document) {
  if (!document.is_object()) throw ReportFormatError("the report is not a JSON object");
  const std::string format = text(document, "format", "report");
  if (format != kFormat)
    throw ReportFormatError("format \"" + format + "\", expected \"" + std::string(kFormat) + "\"");
  const json& version = member(document, "version", "report");
  if (!version.is_number_integer() || version.get<int>() != kVersion)
    throw ReportFormatError("version " + version.dump() + ", this reader knows " +
                            std::to_string(kVersion));
  ProviderReport report;
  report.generator = optional_text(document, "generator");
  const json& p = member(document, "provider", "report");
  report.provider.device = text(p, "device", "provider");
  report.provider.node_type = optional_text(p, "node_type");
  report.provider.link_layer = optional_text(p, "link_layer");
  report.provider.fw_ver = optional_text(p, "fw_ver");
  report.provider.vendor_id = optional_unsigned(p, "vendor_id");
  report.provider.vendor_part_id = optional_unsigned(p, "vendor_part_id");
  report.provider.hw_ver = optional_unsigned(p, "hw_ver");
  report.provider.kernel = optional_text(p, "kernel");
  const json& checks = member(document, "checks", "report");
  if (!checks.is_array()) throw ReportFormatError("report: \"checks\" is not an array");
  for (const json& check : checks) report.checks.push_back(check_from_json(check));
  return report;
}

ProviderReport read_report_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ReportFormatError(path + ": cannot be read");
  try {
    return from_json(json::parse(in));
  } catch (const json::exception& error) {
    throw ReportFormatError(path + ": " + error.what());
  } catch (const ReportFormatError& error) {
    throw ReportFormatError(path + ": " + error.what());
  }
}

}  // namespace verbfault::provider_report

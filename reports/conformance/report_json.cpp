#include "report_json.h"

#include "text_file.h"

#include <nlohmann/json.hpp>

namespace verbfault::reports {

namespace {

using Json = nlohmann::ordered_json;

Json fault_json(const FiredFault& fault) {
  return {{"kind", fault.kind}, {"rule", fault.rule},   {"object", fault.object},
          {"nth", fault.nth},   {"level", fault.level}, {"record", fault.record}};
}

Json entry_json(const Entry& entry) {
  Json json = {{"fault_class", entry.fault_class},
               {"plan", entry.plan},
               {"expect", to_string(entry.expect)},
               {"seed", entry.seed},
               {"outcome", to_string(entry.outcome)},
               {"verdict", to_string(entry.verdict)},
               {"reason", entry.reason},
               {"exit_status", entry.exit_status},
               {"duration_seconds", entry.duration_seconds},
               {"checks", entry.checks},
               {"windows", entry.windows},
               {"faults", Json::array()},
               {"said", entry.said},
               {"replay", entry.replay},
               {"replay_file", entry.replay_file},
               {"trace_hash", entry.trace_hash ? Json(*entry.trace_hash) : Json(nullptr)},
               {"trace_records", entry.trace_records},
               {"excerpt", Json::array()},
               {"timeline", Json::array()}};
  for (const FiredFault& fault : entry.faults) json["faults"].push_back(fault_json(fault));
  // The excerpt keeps each record as the trace wrote it: an object, parsed
  // back, so that tools read fields instead of strings.
  for (const TraceLine& line : entry.excerpt)
    json["excerpt"].push_back(
        {{"index", line.index}, {"record", Json::parse(line.json, nullptr, false)}});
  // Marks as [record, object, kind, label]: compact, a run has thousands.
  for (const TimelineMark& mark : entry.timeline)
    json["timeline"].push_back({mark.record, mark.object, to_string(mark.kind), mark.label});
  return json;
}

// Reading: every field is required and typed; the error names it.
const Json& field(const Json& object, const char* name, const std::string& where) {
  if (!object.is_object() || !object.contains(name))
    throw ReportFormatError(where + ": expected a field '" + name + "'");
  return object.at(name);
}

template <typename T>
T value(const Json& object, const char* name, const std::string& where) {
  const Json& json = field(object, name, where);
  try {
    return json.get<T>();
  } catch (const Json::exception&) {
    throw ReportFormatError(where + "." + name + ": expected a " +
                            (std::is_same_v<T, std::string> ? "string" : "number") + ", got " +
                            json.dump());
  }
}

template <typename Enum>
Enum enum_value(const Json& object, const char* name, const std::string& where,
                std::optional<Enum> (*parse)(std::string_view)) {
  const std::string text = value<std::string>(object, name, where);
  const std::optional<Enum> parsed = parse(text);
  if (!parsed) throw ReportFormatError(where + "." + name + ": unknown value '" + text + "'");
  return *parsed;
}

Entry entry_from(const Json& json, const std::string& where) {
  Entry entry;
  entry.fault_class = value<std::string>(json, "fault_class", where);
  entry.plan = value<std::vector<std::string>>(json, "plan", where);
  entry.expect = enum_value(json, "expect", where, expectation_named);
  entry.seed = value<std::uint64_t>(json, "seed", where);
  entry.outcome = enum_value(json, "outcome", where, outcome_named);
  entry.verdict = enum_value(json, "verdict", where, verdict_named);
  entry.reason = value<std::string>(json, "reason", where);
  entry.exit_status = value<int>(json, "exit_status", where);
  entry.duration_seconds = value<double>(json, "duration_seconds", where);
  entry.checks = value<std::vector<std::string>>(json, "checks", where);
  // Optional (added within version 1): absent in older reports.
  if (json.contains("windows"))
    entry.windows = value<std::vector<std::string>>(json, "windows", where);
  std::size_t i = 0;
  for (const Json& fault : field(json, "faults", where)) {
    const std::string at = where + ".faults[" + std::to_string(i++) + "]";
    entry.faults.push_back(
        {value<std::string>(fault, "kind", at), value<std::size_t>(fault, "rule", at),
         value<std::string>(fault, "object", at), value<std::uint64_t>(fault, "nth", at),
         value<std::string>(fault, "level", at), value<std::size_t>(fault, "record", at)});
  }
  entry.said = value<std::string>(json, "said", where);
  entry.replay = value<std::string>(json, "replay", where);
  entry.replay_file = value<std::string>(json, "replay_file", where);
  if (const Json& hash = field(json, "trace_hash", where); !hash.is_null())
    entry.trace_hash = value<std::string>(json, "trace_hash", where);
  entry.trace_records = value<std::size_t>(json, "trace_records", where);
  i = 0;
  for (const Json& line : field(json, "excerpt", where)) {
    const std::string at = where + ".excerpt[" + std::to_string(i++) + "]";
    entry.excerpt.push_back(
        {value<std::size_t>(line, "index", at), field(line, "record", at).dump()});
  }
  i = 0;
  for (const Json& mark : field(json, "timeline", where)) {
    const std::string at = where + ".timeline[" + std::to_string(i++) + "]";
    if (!mark.is_array() || mark.size() != 4 || !mark[0].is_number_unsigned() ||
        !mark[1].is_string() || !mark[2].is_string() || !mark[3].is_string())
      throw ReportFormatError(at + ": expected [record, object, kind, label]");
    const std::optional<MarkKind> kind = mark_kind_named(mark[2].get<std::string>());
    if (!kind) throw ReportFormatError(at + ": unknown mark kind " + mark[2].dump());
    entry.timeline.push_back({mark[0].get<std::size_t>(), mark[1].get<std::string>(), *kind,
                              mark[3].get<std::string>()});
  }
  return entry;
}

}  // namespace

std::string report_json(const Report& report) {
  const Summary summary = summarize(report);
  Json json = {{"format", kReportFormat},
               {"version", kReportVersion},
               {"application", report.application},
               {"command", report.command},
               {"provider", report.provider},
               {"battery", report.battery},
               {"seeds", report.seeds},
               {"verbfault_version", report.verbfault_version},
               {"started_at", report.started_at},
               {"duration_seconds", report.duration_seconds},
               // Derived from the entries, for a reader that wants the verdict only.
               {"summary",
                {{"entries", summary.entries},
                 {"conforming", summary.conforming},
                 {"not_conforming", summary.not_conforming},
                 {"not_exercised", summary.not_exercised}}},
               {"race_windows", report.race_windows},
               {"mode", report.mode},
               {"classes", report.classes},
               {"build", report.build}};
  if (report.shard)
    json["shard"] = {{"index", report.shard->index}, {"count", report.shard->count}};
  json["entries"] = Json::array();
  for (const Entry& entry : report.entries) json["entries"].push_back(entry_json(entry));
  // Program output may hold any bytes: invalid UTF-8 becomes U+FFFD, not an exception.
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Report report_from_json(const std::string& text) {
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) throw ReportFormatError("report: not a JSON document");
  const std::string where = "report";
  if (value<std::string>(json, "format", where) != kReportFormat)
    throw ReportFormatError("report.format: expected '" + std::string(kReportFormat) + "'");
  if (const int version = value<int>(json, "version", where); version != kReportVersion)
    throw ReportFormatError("report.version: expected " + std::to_string(kReportVersion) +
                            ", got " + std::to_string(version));
  Report report;
  report.application = value<std::string>(json, "application", where);
  report.command = value<std::vector<std::string>>(json, "command", where);
  report.provider = value<std::string>(json, "provider", where);
  report.battery = value<std::string>(json, "battery", where);
  report.seeds = value<std::vector<std::uint64_t>>(json, "seeds", where);
  report.verbfault_version = value<std::string>(json, "verbfault_version", where);
  report.started_at = value<std::string>(json, "started_at", where);
  report.duration_seconds = value<double>(json, "duration_seconds", where);
  // Optional (added within version 1): absent in older reports.
  if (json.contains("race_windows"))
    report.race_windows = value<std::vector<std::string>>(json, "race_windows", where);
  if (json.contains("mode")) {
    report.mode = value<std::string>(json, "mode", where);
    if (report.mode != "conform" && report.mode != "sweep")
      throw ReportFormatError("report.mode: expected \"conform\" or \"sweep\", got '" +
                              report.mode + "'");
  }
  if (json.contains("classes"))
    report.classes = value<std::vector<std::string>>(json, "classes", where);
  if (json.contains("build")) report.build = value<std::string>(json, "build", where);
  if (json.contains("shard")) {
    const Json& shard = json.at("shard");
    const unsigned index = value<unsigned>(shard, "index", "report.shard");
    const unsigned count = value<unsigned>(shard, "count", "report.shard");
    if (index < 1 || index > count)
      throw ReportFormatError("report.shard: expected 1 <= index <= count, got " +
                              std::to_string(index) + "/" + std::to_string(count));
    report.shard = Report::Shard{index, count};
  }
  std::size_t i = 0;
  for (const Json& entry : field(json, "entries", where))
    report.entries.push_back(entry_from(entry, "report.entries[" + std::to_string(i++) + "]"));
  return report;
}

void write_report_json(const Report& report, const std::filesystem::path& path) {
  write_text_file(path, report_json(report));
}

}  // namespace verbfault::reports

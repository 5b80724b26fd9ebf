#include "trace_digest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <optional>

namespace verbfault::reports {

namespace {

using Json = nlohmann::json;

std::string text_of(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// The marks one record draws: a poll that returned completions draws one
// per completion (on the CQ's row, labelled with its QP), everything else
// one mark on its object's row.
void add_marks(std::size_t index, const Json& record, std::vector<TimelineMark>& marks) {
  const std::string object = record.value("obj", std::string("?"));
  if (record.contains("fault")) {
    std::string label = text_of(record["fault"]);
    if (record.contains("event")) label += "(" + text_of(record["event"]) + ")";
    if (record.contains("status")) label += "(" + text_of(record["status"]) + ")";
    if (record.contains("level")) label += ", " + text_of(record["level"]) + " level";
    if (record.contains("nth")) label += ", opportunity " + text_of(record["nth"]);
    marks.push_back({index, object, MarkKind::fault, label});
    return;
  }
  if (record.contains("check")) {
    marks.push_back({index, object, MarkKind::finding,
                     text_of(record["check"]) + ": " + record.value("message", std::string())});
    return;
  }
  const std::string call = record.contains("call") ? text_of(record["call"]) : "?";
  if (const auto wcs = record.find("wc"); wcs != record.end() && wcs->is_array() && !wcs->empty()) {
    for (const Json& wc : *wcs) {
      const std::string status = wc.value("status", std::string("?"));
      std::string label = "wr_id " + text_of(wc.value("wr_id", Json(nullptr))) + " " + status;
      if (wc.contains("opcode")) label += " " + text_of(wc["opcode"]);
      if (wc.contains("qp")) label += " (" + text_of(wc["qp"]) + ")";
      marks.push_back({index, object,
                       status == "success" ? MarkKind::completion : MarkKind::error_completion,
                       label});
    }
    return;
  }
  std::string label = call;
  if (record.contains("event")) label += " " + text_of(record["event"]);
  if (record.contains("ret") && record["ret"] != 0 && record["ret"] != "ok")
    label += " -> " + text_of(record["ret"]);
  if (record.contains("times")) label += " x" + text_of(record["times"]);
  const bool event = call == "get_cq_event" || call == "get_async_event";
  marks.push_back({index, object, event ? MarkKind::event : MarkKind::call, label});
}

}  // namespace

TraceDigest digest_trace(const std::filesystem::path& path) {
  TraceDigest digest;
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::vector<bool> is_record;  // a JSON object: the excerpt keeps records only
  std::optional<std::size_t> first_fault, first_finding, first_check;
  std::vector<TimelineMark> marks;
  for (std::string line; std::getline(in, line);) {
    const std::size_t index = lines.size();
    lines.push_back(line);
    const Json record = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    is_record.push_back(record.is_object());
    if (!record.is_object()) continue;
    if (record.contains("fault") && !first_fault) first_fault = index;
    if (record.contains("check")) {
      if (!first_check) first_check = index;
      // A leak at exit is reported but does not fail a run: the first
      // finding is the first other check, when there is one.
      if (!first_finding && record["check"] != "resource.leak_at_exit") first_finding = index;
    }
    if (record.value("call", std::string()) == "open_device") {
      const std::string device = record.value("device", std::string("?")) + " (" +
                                 record.value("provider", std::string("?")) + ")";
      if (std::find(digest.devices.begin(), digest.devices.end(), device) == digest.devices.end())
        digest.devices.push_back(device);
    }
    add_marks(index, record, marks);
  }
  digest.records = lines.size();
  if (!first_finding) first_finding = first_check;

  // The excerpt: kExcerptContext records either side of each, overlaps merged.
  std::vector<std::size_t> picked;
  for (const std::optional<std::size_t>& center : {first_fault, first_finding}) {
    if (!center) continue;
    const std::size_t from = *center > kExcerptContext ? *center - kExcerptContext : 0;
    const std::size_t to = std::min(lines.size(), *center + kExcerptContext + 1);
    for (std::size_t i = from; i < to; ++i) picked.push_back(i);
  }
  std::sort(picked.begin(), picked.end());
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  for (const std::size_t i : picked)
    if (is_record[i]) digest.excerpt.push_back({i, lines[i]});

  // The timeline: every mark, or kTimelineMarks of them around the first
  // fault (else the first finding) when there are more.
  if (marks.size() > kTimelineMarks) {
    const std::size_t center = first_fault.value_or(first_finding.value_or(0));
    const auto at = std::lower_bound(
        marks.begin(), marks.end(), center,
        [](const TimelineMark& mark, std::size_t record) { return mark.record < record; });
    const std::size_t middle = static_cast<std::size_t>(at - marks.begin());
    const std::size_t from = std::min(middle > kTimelineMarks / 2 ? middle - kTimelineMarks / 2 : 0,
                                      marks.size() - kTimelineMarks);
    marks = std::vector<TimelineMark>(marks.begin() + from, marks.begin() + from + kTimelineMarks);
  }
  digest.timeline = std::move(marks);
  return digest;
}

}  // namespace verbfault::reports

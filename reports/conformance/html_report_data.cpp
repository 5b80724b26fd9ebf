#include "html_report_data.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

namespace verbfault::reports {

namespace {

constexpr std::array<MarkKind, 6> kMarkKinds{
    MarkKind::call,  MarkKind::completion, MarkKind::error_completion,
    MarkKind::event, MarkKind::fault,      MarkKind::finding};

// An object's name, "qp#3", as the key its row sorts by. The kinds a verbs
// program creates first come first, in the order it creates them; a name
// without a number sorts after its kind's numbered objects.
std::tuple<int, std::string_view, std::uint64_t, std::string_view> row_key(std::string_view name) {
  constexpr std::array<std::string_view, 4> kFirstKinds{"context", "pd", "cq", "qp"};
  const std::size_t hash = name.find('#');
  const std::string_view kind = name.substr(0, hash);
  std::uint64_t index = std::numeric_limits<std::uint64_t>::max();
  if (hash != std::string_view::npos) {
    const std::string_view digits = name.substr(hash + 1);
    std::uint64_t parsed = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed);
    if (error == std::errc{} && end == digits.data() + digits.size()) index = parsed;
  }
  const auto first = std::find(kFirstKinds.begin(), kFirstKinds.end(), kind);
  const int rank = static_cast<int>(first - kFirstKinds.begin());
  // The other kinds share the rank after the first four and sort by name.
  return {rank, rank < static_cast<int>(kFirstKinds.size()) ? std::string_view{} : kind, index,
          name};
}

std::size_t mark_kind_index(MarkKind kind) {
  return static_cast<std::size_t>(std::find(kMarkKinds.begin(), kMarkKinds.end(), kind) -
                                  kMarkKinds.begin());
}

nlohmann::json timeline_json(const std::vector<TimelineMark>& marks) {
  const std::vector<std::string> rows = timeline_rows(marks);
  std::map<std::string_view, std::size_t> row_of;
  for (std::size_t i = 0; i < rows.size(); ++i) row_of.emplace(rows[i], i);
  nlohmann::json drawn = nlohmann::json::array();
  for (const TimelineMark& mark : marks)
    drawn.push_back({mark.record, row_of.at(mark.object), mark_kind_index(mark.kind), mark.label});
  return {{"rows", rows}, {"marks", std::move(drawn)}};
}

nlohmann::json entry_json(const Entry& entry) {
  nlohmann::json faults = nlohmann::json::array();
  for (const FiredFault& fault : entry.faults)
    faults.push_back({{"kind", fault.kind},
                      {"rule", fault.rule},
                      {"object", fault.object},
                      {"nth", fault.nth},
                      {"level", fault.level},
                      {"record", fault.record}});
  nlohmann::json excerpt = nlohmann::json::array();
  for (const TraceLine& line : entry.excerpt) excerpt.push_back({line.index, line.json});
  return {
      {"fault_class", entry.fault_class},
      {"seed", std::to_string(entry.seed)},
      {"plan", entry.plan},
      {"expect", to_string(entry.expect)},
      {"outcome", to_string(entry.outcome)},
      {"verdict", to_string(entry.verdict)},
      {"reason", entry.reason},
      {"exit_status", entry.exit_status},
      {"duration_seconds", entry.duration_seconds},
      {"checks", entry.checks},
      {"windows", entry.windows},
      {"faults", std::move(faults)},
      {"said", entry.said},
      {"replay", entry.replay},
      {"replay_file", entry.replay_file},
      {"trace_hash", entry.trace_hash ? nlohmann::json(*entry.trace_hash) : nlohmann::json()},
      {"trace_records", entry.trace_records},
      {"excerpt", std::move(excerpt)},
      {"timeline", timeline_json(entry.timeline)},
  };
}

}  // namespace

std::string display_name(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '_', ' ');
  return out;
}

std::vector<std::string> timeline_rows(const std::vector<TimelineMark>& marks) {
  std::vector<std::string> rows;
  for (const TimelineMark& mark : marks) rows.push_back(mark.object);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  std::stable_sort(rows.begin(), rows.end(), [](const std::string& a, const std::string& b) {
    return row_key(a) < row_key(b);
  });
  return rows;
}

nlohmann::json html_report_data(const Report& report) {
  nlohmann::json kinds = nlohmann::json::array();
  for (const MarkKind kind : kMarkKinds) kinds.push_back(to_string(kind));
  nlohmann::json entries = nlohmann::json::array();
  for (const Entry& entry : report.entries) entries.push_back(entry_json(entry));
  return {{"mark_kinds", std::move(kinds)}, {"entries", std::move(entries)}};
}

}  // namespace verbfault::reports

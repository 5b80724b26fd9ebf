#include "report.h"

#include <algorithm>
#include <array>
#include <utility>

namespace verbfault::reports {

namespace {

template <typename Enum, std::size_t N>
std::optional<Enum> named(const std::array<std::pair<Enum, std::string_view>, N>& names,
                          std::string_view name) {
  for (const auto& [value, text] : names)
    if (text == name) return value;
  return std::nullopt;
}

template <typename Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& names,
                         Enum value) {
  for (const auto& [candidate, text] : names)
    if (candidate == value) return text;
  return "?";
}

// The names are the JSON schema's enumerations: change both together.
constexpr std::array<std::pair<Outcome, std::string_view>, 7> kOutcomeNames{{
    {Outcome::success, "success"},
    {Outcome::clean_failure, "clean_failure"},
    {Outcome::finding, "finding"},
    {Outcome::hang, "hang"},
    {Outcome::crash, "crash"},
    {Outcome::timeout, "timeout"},
    {Outcome::error, "error"},
}};
constexpr std::array<std::pair<Expectation, std::string_view>, 3> kExpectationNames{{
    {Expectation::success, "success"},
    {Expectation::recovery, "recovery"},
    {Expectation::clean_failure, "clean_failure"},
}};
constexpr std::array<std::pair<Verdict, std::string_view>, 3> kVerdictNames{{
    {Verdict::conforms, "conforms"},
    {Verdict::does_not_conform, "does_not_conform"},
    {Verdict::not_exercised, "not_exercised"},
}};
constexpr std::array<std::pair<MarkKind, std::string_view>, 6> kMarkNames{{
    {MarkKind::call, "call"},
    {MarkKind::completion, "completion"},
    {MarkKind::error_completion, "error_completion"},
    {MarkKind::event, "event"},
    {MarkKind::fault, "fault"},
    {MarkKind::finding, "finding"},
}};

}  // namespace

std::vector<std::size_t> entries_reaching(const Report& report, const std::string& window) {
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < report.entries.size(); ++i) {
    const std::vector<std::string>& reached = report.entries[i].windows;
    if (std::find(reached.begin(), reached.end(), window) != reached.end()) found.push_back(i);
  }
  return found;
}

Summary summarize(const Report& report) {
  Summary summary;
  for (const Entry& entry : report.entries) {
    ++summary.entries;
    switch (entry.verdict) {
      case Verdict::conforms:
        ++summary.conforming;
        break;
      case Verdict::does_not_conform:
        ++summary.not_conforming;
        break;
      case Verdict::not_exercised:
        ++summary.not_exercised;
        break;
    }
  }
  return summary;
}

std::string_view to_string(Outcome outcome) {
  return name_of(kOutcomeNames, outcome);
}
std::string_view to_string(Expectation expectation) {
  return name_of(kExpectationNames, expectation);
}
std::string_view to_string(Verdict verdict) {
  return name_of(kVerdictNames, verdict);
}
std::string_view to_string(MarkKind kind) {
  return name_of(kMarkNames, kind);
}
std::optional<Outcome> outcome_named(std::string_view name) {
  return named(kOutcomeNames, name);
}
std::optional<Expectation> expectation_named(std::string_view name) {
  return named(kExpectationNames, name);
}
std::optional<Verdict> verdict_named(std::string_view name) {
  return named(kVerdictNames, name);
}
std::optional<MarkKind> mark_kind_named(std::string_view name) {
  return named(kMarkNames, name);
}

}  // namespace verbfault::reports

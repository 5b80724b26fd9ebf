#include "provider_report.h"

#include <algorithm>

namespace verbfault::provider_report {

std::string_view name(Verdict verdict) {
  switch (verdict) {
    case Verdict::conforms:
      return "conforms";
    case Verdict::deviates:
      return "deviates";
    case Verdict::unsupported:
      return "unsupported";
    case Verdict::inconclusive:
      return "inconclusive";
  }
  return "inconclusive";
}

std::optional<Verdict> verdict_from_name(std::string_view text) {
  for (Verdict verdict : kVerdicts)
    if (name(verdict) == text) return verdict;
  return std::nullopt;
}

std::string_view Check::area() const {
  const std::string_view whole = id;
  return whole.substr(0, whole.find('.'));
}

const Check* ProviderReport::find(std::string_view id) const {
  const auto it =
      std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.id == id; });
  return it == checks.end() ? nullptr : &*it;
}

std::size_t ProviderReport::count(Verdict verdict) const {
  return static_cast<std::size_t>(std::count_if(
      checks.begin(), checks.end(), [&](const Check& c) { return c.verdict == verdict; }));
}

}  // namespace verbfault::provider_report

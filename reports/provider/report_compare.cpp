#include "report_compare.h"

namespace verbfault::provider_report {

std::vector<Difference> compare(const ProviderReport& baseline, const ProviderReport& fresh) {
  std::vector<Difference> out;
  for (const Check& was : baseline.checks) {
    const Check* now = fresh.find(was.id);
    if (now == nullptr) {
      out.push_back({was.id, "no longer reported (was " + std::string(name(was.verdict)) + ")"});
      continue;
    }
    std::string what;
    if (now->verdict != was.verdict)
      what = "verdict " + std::string(name(was.verdict)) + " -> " + std::string(name(now->verdict));
    if (now->value != was.value) {
      if (!what.empty()) what += "; ";
      what += "value " + was.value.dump() + " -> " + now->value.dump() + " (now: " + now->observed +
              ")";
    }
    if (!what.empty()) out.push_back({was.id, what});
  }
  for (const Check& now : fresh.checks)
    if (baseline.find(now.id) == nullptr)
      out.push_back(
          {now.id, "new check (" + std::string(name(now.verdict)) + ": " + now.observed + ")"});
  return out;
}

}  // namespace verbfault::provider_report

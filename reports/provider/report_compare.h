// A fresh provider report held against a committed one (the test that
// guards reports/providers/*.json): each check whose verdict or observed
// value changed, each check that came or went. Titles, wording and the
// provider's description may change freely; the values may not.
#pragma once

#include "provider_report.h"

#include <string>
#include <vector>

namespace verbfault::provider_report {

struct Difference {
  std::string id;    // the check
  std::string what;  // "verdict conforms -> deviates; value 3 -> 7"
};

std::vector<Difference> compare(const ProviderReport& baseline, const ProviderReport& fresh);

}  // namespace verbfault::provider_report

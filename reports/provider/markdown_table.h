// Several providers' reports side by side, in Markdown: a summary table
// (checks, deviations, unsupported, inconclusive per provider), then one
// table per area whose rows are the checks and whose columns are the
// providers, each cell what that provider did, a deviation in bold with
// a cross. One report gives the same document with one column
// (DIR/provider-NAME.md).
#pragma once

#include "provider_report.h"

#include <string>
#include <vector>

namespace verbfault::provider_report {

// preface: Markdown put between the title and the summary (may be empty).
std::string side_by_side_markdown(const std::vector<ProviderReport>& reports,
                                  const std::string& preface);

}  // namespace verbfault::provider_report

// `verbfault report merge [--out DIR] DIR...`: the reports of a run's
// shards (sweep --report or conform, each --shard I/N on its own machine)
// joined into the report of the whole run (reports/conformance/report_merge.h),
// written as DIR/report.{json,xml,md,html}.
#pragma once

#include <string>
#include <vector>

namespace verbfault::cli {

struct ReportMergeOptions {
  std::vector<std::string> parts;  // report directories or report.json files
  std::string out = "verbfault-report";

  bool operator==(const ReportMergeOptions&) const = default;
};

// 0 when every run of the merged report conforms, 1 when some do not,
// exit_status::kUsage when a part cannot be read or the parts are not of one run.
int report_merge(const ReportMergeOptions& options);

}  // namespace verbfault::cli

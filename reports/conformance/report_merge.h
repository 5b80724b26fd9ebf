// Joining the reports of one run split over machines (`--shard I/N` of
// `verbfault sweep --report` or `verbfault conform`, or conform's
// `--class`es run apart) into the report the run would have written whole:
// the entries of all, in the battery's order then the seeds' order.
// `verbfault report merge DIR...` writes it.
#pragma once

#include "report.h"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace verbfault::reports {

// Reports that are not parts of one run; what() is one line naming the
// reports and the field they disagree on (or the shard missing, or the
// entry two of them hold).
class ReportMergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PartReport {
  std::filesystem::path dir;  // where it was read: its replay files are relative to it
  Report report;
};

// The parts must agree on the mode, the application, the command, the
// provider, the battery, the seeds, the fault classes and the build; when
// any is a shard, all are, of one count, each index once; no entry (fault
// class, seed) in two. The merged report's replay files are relative to
// `out_dir`; it starts when the first part started and lasts as long as the
// longest (the parts ran side by side). Throws ReportMergeError.
Report merge_reports(const std::vector<PartReport>& parts, const std::filesystem::path& out_dir);

}  // namespace verbfault::reports

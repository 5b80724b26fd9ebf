// `verbfault conform [--battery default|FILE] [--seeds N] [--jobs N]
//                    [--class NAME]... [--shard I/N|auto|auto/N]
//                    [--report DIR] [--timeout S] -- CMD ARGS`
// (`verbfault conform --list-classes [--battery B]` prints the classes)
// runs an application under a battery of fault plans (battery.h), every
// entry with seeds 1..N, through the runner sweep uses, and holds each
// run's outcome against the entry's expectation. Writes the report
// (reports/conformance): DIR/report.json, report.xml (JUnit), report.md,
// report.html, and each run's output, trace and (when it does not
// conform) replay file under DIR/runs/.
#pragma once

#include "shard.h"

#include <optional>
#include <string>
#include <vector>

namespace verbfault::cli {

struct ConformOptions {
  std::string battery = "default";
  std::optional<unsigned> seeds;  // per entry; default: the battery's
  unsigned jobs = 0;              // 0: the number of cores
  bool fork_server = false;       // as SweepOptions::fork_server
  std::string report_dir = "verbfault-report";
  double timeout_seconds = 120;  // per run, wall clock
  std::optional<std::string> threads;
  std::string library;
  std::vector<std::string> command;
  // Only these fault classes of the battery (--class, repeatable); empty: all.
  std::vector<std::string> classes;
  // Print the battery's fault classes, one a line, and run nothing.
  bool list_classes = false;
  Shard shard;  // --shard: every N-th run (of classes x seeds) from the I-th

  bool operator==(const ConformOptions&) const = default;
};

// 0 when every run that exercised its fault conforms, 1 when some run does
// not, exit_status::kUsage for a bad battery, an unwritable report or a command
// that cannot run.
int conform(const ConformOptions& options);

}  // namespace verbfault::cli

// verbfault provider-report [--device NAME] [--report DIR] [--baseline FILE]
// verbfault provider-report --compare A.json B.json ...
//
// Runs the provider probe (reports/provider/probe: a battery of verbs
// semantics, plain libibverbs) against one device and writes
// DIR/provider-NAME.json (reports/schema/provider-report.schema.json) and
// DIR/provider-NAME.md, then prints one line: N checks, K deviations.
// A simulated device (vfsim*) is reached with libverbfault.so preloaded
// and the harness off (no seed, plan, rules or trace), so that neither
// the runtime checks, nor the thread scheduler, nor the liveness checks
// see the probe's deliberate misuse; a real device is probed without the
// preload: the report describes the provider, not verbfault's pass-through.
//
// --baseline FILE: the run is held against a committed report; each check
// whose verdict or value changed is printed, with the command that
// regenerates the file (exit status 1).
// --compare: no probe run; the reports given, side by side in Markdown on
// stdout (reports/providers/README.md).
//
// Exit status: 0; 1 when the probe failed or the baseline differs;
// exit_status::kUsage (125) for a bad option, an unknown device (named, with the
// devices found) or an unreadable report.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace verbfault::cli {

struct ProviderReportOptions {
  std::string device = "vfsim0";
  std::string report_dir = "out";
  std::optional<std::string> baseline;
  std::vector<std::string> compare;
  std::string library;  // libverbfault.so, preloaded for a simulated device
  std::string probe;    // verbfault-provider-probe (default: found beside verbfault)

  bool operator==(const ProviderReportOptions&) const = default;
};

int provider_report(const ProviderReportOptions& options);

}  // namespace verbfault::cli

// A run's outcome as an entry of a report (reports/conformance/report.h):
// what conform and sweep's --report share. Conform holds the run against
// its battery entry's expectation; sweep against its own oracle
// (seed_run.h), so each says its verdict and this fills the rest.
#pragma once

#include "report.h"
#include "runner.h"

#include <string>
#include <vector>

namespace verbfault::cli {

// How the run ended, from the outside.
reports::Outcome classify(const Outcome& outcome);

// Whether a fault that changed what the program saw fired: a rule that
// fired where its fault cannot be injected (level "unsupported":
// docs/fault-kinds.md, "Fault levels") changed nothing.
bool exercised(const Outcome& outcome);

// Fills `entry` (its class, plan, expectation, seed and verdict already
// set) from the ended run: outcome, reason, status, checks, windows, faults,
// what the program said last, the reproduce line, and the trace's digest
// (its excerpt and timeline only when `keep_timeline`). The first device
// the traces name goes into `provider` when it is empty.
void fill_entry(reports::Entry& entry, const BatchRun& run, const Outcome& outcome,
                const std::vector<std::string>& race_windows, double timeout_seconds,
                bool keep_timeline, std::string& provider);

// Now, in UTC, ISO 8601 to the second.
std::string utc_now();

// The build that runs: the version and the hash of `library` ("0.1.0+<16 hex>").
std::string build_identity(const std::string& library);

}  // namespace verbfault::cli

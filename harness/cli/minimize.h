// `verbfault minimize --seed N (--plan FILE | --fault RULE ...)
//                     [--signature same|any] [--out STEM] -- CMD ARGS`
// `verbfault minimize --replay FILE [--signature same|any] [--out STEM]``
// turns a failing run into the smallest plan that still fails:
//
// 1. The faults that fired (from the trace: each firing's rule, object and
//    opportunity number) become an explicit plan, one `KIND OBJECT nth=N`
//    rule per firing: nothing probabilistic is left.
// 2. ddmin (Zeller and Hildebrandt, "Simplifying and Isolating
//    Failure-Inducing Input", TSE 2002) over that list, keeping a subset
//    when the run still fails with the same signature (exit status,
//    checks, first fault) or, with --signature any, fails at all.
// 3. Each remaining rule's trigger down: an earlier opportunity (nth=1,
//    2, ...) where that still fails.
// 4. The canonical freedoms (VERBFAULT_FREEDOMS=canonical) and the
//    smallest schedule perturbation (PCT depth 1, then 2) where they keep
//    the failure.
//
// The result is a plan file with a header comment (command, seed,
// signature, how many runs it took) and, with --out STEM, STEM.plan and
// STEM.replay: a regression scenario ready to commit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace verbfault::cli {

struct MinimizeOptions {
  std::uint64_t seed = 0;
  std::optional<std::string> plan_file;
  std::vector<std::string> faults;
  std::optional<std::string> threads;
  std::vector<std::pair<std::string, std::string>> settings;  // VERBFAULT_NAME=value for each run
  std::vector<int> pass_statuses = {0};                       // as sweep's --pass-status
  bool same_signature = true;                                 // --signature same (default) or any
  std::optional<std::string> out;  // STEM: write STEM.plan and STEM.replay
  double timeout_seconds = 300;    // per run
  std::string library;
  std::vector<std::string> command;

  bool operator==(const MinimizeOptions&) const = default;
};

// 0: a minimal plan was found (printed, or written to --out); 1: the run
// does not fail, so there is nothing to minimize; exit_status::kUsage: bad input.
int minimize(const MinimizeOptions& options);

}  // namespace verbfault::cli

// `verbfault run`: an unmodified program under the harness.
#pragma once

#include "verbfault/plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace verbfault::cli {

struct RunOptions {
  std::optional<std::uint64_t> seed;
  std::optional<std::string> plan_file;
  std::vector<std::string> faults;  // one-line rules
  std::optional<std::string> trace;
  bool check_determinism = false;
  // VERBFAULT_THREADS for the program: "pct..." (default), "random", "free".
  std::optional<std::string> threads;
  std::string library;  // libverbfault.so to preload
  std::vector<std::string> command;
};

// The plan of --plan FILE then --fault RULE...; throws PlanError.
Plan read_plan(const std::optional<std::string>& plan_file, const std::vector<std::string>& faults);

// Returns the exit status of `verbfault run` (see process.h).
int run(const RunOptions& options);

}  // namespace verbfault::cli

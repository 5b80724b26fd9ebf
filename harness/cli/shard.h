// Which part of a sweep's seeds or a conformance run's runs this machine
// runs, when one job is split over the jobs of a CI matrix or the pods of
// a Kubernetes Indexed Job: shard I of N takes every N-th run from the
// I-th, so the N shards partition the runs, and `verbfault report merge`
// joins their reports into the unsharded one (reports/conformance/report_merge.h).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace verbfault::cli {

struct Shard {
  unsigned index = 1;  // 1..count
  unsigned count = 1;

  bool operator==(const Shard&) const = default;
};

// Reads the environment (a test passes its own).
using EnvironmentReader = std::function<std::optional<std::string>(const std::string& name)>;
EnvironmentReader process_environment();

// Parses --shard's text: "I/N"; "auto", the shard from the CI's
// environment (GitLab's `parallel:`: CI_NODE_INDEX, 1-based, of
// CI_NODE_TOTAL); or "auto/N", the index from the environment and the
// count given (a Kubernetes Indexed Job: JOB_COMPLETION_INDEX, 0-based,
// with N its `completions`; or CI_NODE_INDEX). Throws std::invalid_argument
// with one line naming the option or variable and what was expected.
Shard parse_shard(const std::string& text, const EnvironmentReader& environment);

// Whether run `position` (0-based, in the unsharded order) is this shard's.
inline bool in_shard(const Shard& shard, std::size_t position) {
  return position % shard.count == shard.index - 1;
}

}  // namespace verbfault::cli

// `verbfault sweep --seeds A..B [--plan FILE | --fault RULE ...] [--jobs N]
//                  [--shard I/N|auto|auto/N] [--max-failures K] [--timeout S]
//                  [--out DIR] [--report DIR] [--threads MODE] -- CMD ARGS`
// runs the command once per seed, in parallel, each under `verbfault run`
// (its oracle: the program's exit status, the checks' findings, hangs the
// harness ended, crashes by signal; a wall-clock timeout as the last
// resort), and groups the failures by signature: exit status, the checks
// that fired, the first fault that fired. So forty seeds failing the same
// way read as one bug, each with the line that reproduces it. With
// --report, the seeds' outcomes are also a report (report.json, .xml, .md,
// .html: reports/conformance), which `verbfault report merge` joins with
// the other shards' into the unsharded one.
#pragma once

#include "shard.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace verbfault::cli {

struct SweepOptions {
  std::uint64_t first_seed = 1;
  std::uint64_t last_seed = 1;
  std::optional<std::string> plan_file;  // with swarm: the palette (swarm.h)
  std::vector<std::string> faults;
  // Each seed draws its plan from the palette (the default one, or
  // plan_file's); the drawn rules go on the run's command line.
  bool swarm = false;
  std::optional<std::string> threads;
  unsigned jobs = 0;         // 0: the number of cores
  // --fork-server: a fork server per job (fork_server.h) instead of an
  // exec of the program per seed.
  bool fork_server = false;
  Shard shard;  // seeds first + (index-1) + k*count
  unsigned max_failures = 0;     // 0: no limit
  double timeout_seconds = 300;  // per run, wall clock
  // Exit statuses that count as a pass when no check reported: a program
  // that reports an injected fault cleanly (exit 1) can be told to pass.
  std::vector<int> pass_statuses = {0};
  std::optional<std::string> out;  // each run's output and trace: DIR/seed-S.{log,jsonl}
  // The report's directory: DIR/report.{json,xml,md,html}; the failed
  // runs' files under DIR/runs/ unless --out says where.
  std::optional<std::string> report_dir;
  std::string library;
  std::vector<std::string> command;

  bool operator==(const SweepOptions&) const = default;
};

// Parses "A..B" (or one seed "A") into the options; throws
// std::invalid_argument naming what was expected.
void parse_seed_range(const std::string& text, SweepOptions& options);

// Returns 0 when no seed failed, 1 when some did, exit_status::kUsage for bad input
// (a palette that cannot be read, --swarm with --fault).
int sweep(const SweepOptions& options);

}  // namespace verbfault::cli

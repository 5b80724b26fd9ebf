// Running many seeds' runs N at a time: the runner sweep and conform share.
// Each run is a `verbfault run` child in a process group of its own
// (seed_run.h); a wall-clock timeout kills the group as the last resort.
// The runs' ends are reported in the order they happen, from this thread.
#pragma once

#include "seed_run.h"

#include <cstddef>
#include <filesystem>
#include <functional>
#include <vector>

namespace verbfault::cli {

struct BatchRun {
  SeedRun spec;
  std::filesystem::path log, trace;  // where its output and trace go
};

struct BatchOptions {
  unsigned jobs = 1;
  // The exit statuses that pass when no check reported (judge_seed_run).
  std::vector<int> pass_statuses = {0};
  // Asked before each start: true stops starting runs (the running ones end).
  std::function<bool()> stop;
  // Runs of one command go through a fork server per job slot
  // (fork_server.h), unless it refuses; then (and for runs of several
  // commands) each run starts the program from exec, one line saying why.
  bool fork_server = false;
};

// Runs `runs` (the specs are started as given), calling `ended(index,
// outcome)` as each ends; outcome.seconds is its wall-clock time. Returns
// false, with errno, when a run cannot be started (fork failed); the ones
// running then are waited for first.
bool run_batch(const std::vector<BatchRun>& runs, const BatchOptions& options,
               const std::function<void(std::size_t index, Outcome&& outcome)>& ended);

// One run to its end (or its timeout), judged; the log and trace stay in
// `dir` as seed-S.log and seed-S.jsonl (minimize, replay).
Outcome run_seed(const SeedRun& run, const std::filesystem::path& dir,
                 const std::vector<int>& pass_statuses = {0});

}  // namespace verbfault::cli

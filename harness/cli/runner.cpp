#include "runner.h"

#include "process.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <thread>

namespace verbfault::cli {

bool run_batch(const std::vector<BatchRun>& runs, const BatchOptions& options,
               const std::function<void(std::size_t, Outcome&&)>& ended) {
  using Clock = std::chrono::steady_clock;
  struct Running {
    std::size_t index;
    Clock::time_point started;
    bool killed = false;
  };
  std::map<pid_t, Running> running;
  std::size_t next = 0;
  int fork_errno = 0;
  const unsigned jobs = options.jobs == 0 ? 1 : options.jobs;
  auto may_start = [&] {
    return fork_errno == 0 && next < runs.size() && !(options.stop && options.stop());
  };
  // A run takes milliseconds to minutes: poll the ends, backing off from
  // 0.2 ms to 2 ms while nothing ends.
  auto nap = std::chrono::microseconds(200);
  while (!running.empty() || may_start()) {
    while (running.size() < jobs && may_start()) {
      const BatchRun& run = runs[next];
      const pid_t pid = start_seed_run(run.spec, run.log, run.trace);
      if (pid < 0) {
        fork_errno = errno;
        break;
      }
      running[pid] = {next++, Clock::now()};
    }
    int raw = 0;
    const pid_t pid = waitpid(-1, &raw, WNOHANG);
    if (pid <= 0) {
      // Nothing ended: a timeout is the last resort.
      for (auto& [child, run] : running) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - run.started).count();
        if (!run.killed && elapsed > runs[run.index].spec.timeout_seconds) {
          kill(-child, SIGKILL);
          run.killed = true;
        }
      }
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(2000));
      continue;
    }
    nap = std::chrono::microseconds(200);
    const auto found = running.find(pid);
    if (found == running.end()) continue;  // not one of ours
    const Running run = found->second;
    running.erase(found);
    const BatchRun& spec = runs[run.index];
    const int status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    Outcome outcome = judge_seed_run(spec.spec.seed, status, run.killed, spec.log, spec.trace,
                                     options.pass_statuses);
    outcome.seconds = std::chrono::duration<double>(Clock::now() - run.started).count();
    ended(run.index, std::move(outcome));
  }
  errno = fork_errno;
  return fork_errno == 0;
}

Outcome run_seed(const SeedRun& run, const std::filesystem::path& dir,
                 const std::vector<int>& pass_statuses) {
  BatchOptions options;
  options.pass_statuses = pass_statuses;
  std::optional<Outcome> ended;
  const bool started =
      run_batch({{run, log_path(dir, run.seed), trace_path(dir, run.seed)}}, options,
                [&](std::size_t, Outcome&& outcome) { ended = std::move(outcome); });
  if (!started)
    return judge_seed_run(run.seed, exit_status::kCannotExecute, false, log_path(dir, run.seed),
                          trace_path(dir, run.seed), pass_statuses);
  return std::move(*ended);
}

}  // namespace verbfault::cli

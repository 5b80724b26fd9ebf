#include "runner.h"

#include "command_list.h"
#include "fork_server.h"
#include "process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace verbfault::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Running {
  pid_t pid = 0;
  std::size_t index = 0;
  std::size_t slot = 0;  // its job slot (and fork server)
  Clock::time_point started, deadline;
  int pidfd = -1;  // readable once the child has ended (pidfd_open(2)); -1: none
  bool killed = false;
};

// A descriptor that becomes readable when `pid` ends, or -1 where the
// kernel has none (before Linux 5.3, or a seccomp filter that refuses it).
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// Kills the runs whose wall-clock limit passed (the last resort), and
// returns how long until the next one's.
std::chrono::milliseconds enforce_timeouts(std::vector<Running>& running) {
  const Clock::time_point now = Clock::now();
  auto next = Clock::time_point::max();
  for (Running& run : running) {
    if (run.killed) continue;
    if (now >= run.deadline) {
      kill(-run.pid, SIGKILL);
      run.killed = true;
    } else {
      next = std::min(next, run.deadline);
    }
  }
  if (next == Clock::time_point::max()) return std::chrono::milliseconds(-1);
  return std::chrono::ceil<std::chrono::milliseconds>(next - now);
}

// Blocks until a run ends (its pidfd readable) or the next timeout is due:
// no polling, so a run that takes 2 ms costs 2 ms. Without pidfds, naps of
// 0.2 to 2 ms between non-blocking waits (`nap` carries the back-off).
// Returns the ended run's position in `running`, or nothing.
std::optional<std::size_t> wait_for_an_end(std::vector<Running>& running, int* raw,
                                           std::chrono::microseconds& nap) {
  const std::chrono::milliseconds timeout = enforce_timeouts(running);
  const bool pidfds = std::all_of(running.begin(), running.end(),
                                  [](const Running& run) { return run.pidfd >= 0; });
  if (pidfds) {
    std::vector<pollfd> fds;
    fds.reserve(running.size());
    for (const Running& run : running) fds.push_back({run.pidfd, POLLIN, 0});
    const int ready = poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
    if (ready <= 0) return std::nullopt;  // a timeout is due, or EINTR
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents != 0 && waitpid(running[i].pid, raw, WNOHANG) == running[i].pid) return i;
    return std::nullopt;
  }
  for (std::size_t i = 0; i < running.size(); ++i)
    if (waitpid(running[i].pid, raw, WNOHANG) == running[i].pid) {
      nap = std::chrono::microseconds(200);
      return i;
    }
  std::this_thread::sleep_for(nap);
  nap = std::min(nap * 2, std::chrono::microseconds(2000));
  return std::nullopt;
}

// Why the runs cannot share a fork server, or "" when they can.
std::string fork_server_unusable(const std::vector<BatchRun>& runs) {
  if (runs.empty()) return "no runs";
  for (const BatchRun& run : runs)
    if (run.spec.command != runs.front().spec.command ||
        run.spec.library != runs.front().spec.library)
      return "the runs are of different commands";
  if (split_commands(runs.front().spec.command).size() > 1)
    return "a run of several commands (each process would need one)";
  return "";
}

}  // namespace

bool run_batch(const std::vector<BatchRun>& runs, const BatchOptions& options,
               const std::function<void(std::size_t, Outcome&&)>& ended) {
  std::vector<Running> running;
  std::size_t next = 0;
  int fork_errno = 0;
  const unsigned jobs = options.jobs == 0 ? 1 : options.jobs;
  auto may_start = [&] {
    return fork_errno == 0 && next < runs.size() && !(options.stop && options.stop());
  };
  auto nap = std::chrono::microseconds(200);
  // The job slots: which are taken, and each one's fork server once started.
  std::vector<bool> taken(jobs, false);
  std::vector<std::unique_ptr<ForkServer>> servers(jobs);
  bool serve = options.fork_server;
  if (serve) {
    if (const std::string why = fork_server_unusable(runs); !why.empty()) {
      std::fprintf(stderr, "verbfault: fork server not used: %s; each run starts from exec\n",
                   why.c_str());
      serve = false;
    }
  }
  while (!running.empty() || may_start()) {
    while (running.size() < jobs && may_start()) {
      const BatchRun& run = runs[next];
      const std::size_t slot =
          static_cast<std::size_t>(std::find(taken.begin(), taken.end(), false) - taken.begin());
      if (serve && !servers[slot]) {
        std::string why;
        const std::filesystem::path prefix =
            run.log.parent_path() / ("fork-server-" + std::to_string(slot + 1) + ".log");
        servers[slot] = ForkServer::start(run.spec.command, run.spec.library, run.spec.settings,
                                          prefix, run.spec.timeout_seconds, why);
        if (!servers[slot]) {
          std::fprintf(stderr,
                       "verbfault: fork server not used: %s; each run starts the program from "
                       "exec\n",
                       why.c_str());
          std::error_code ignored;
          std::filesystem::remove(prefix, ignored);
          serve = false;
          servers.clear();
          servers.resize(jobs);
        }
      }
      const Clock::time_point started = Clock::now();
      const pid_t pid = start_seed_run(run.spec, run.log, run.trace, servers[slot].get());
      if (pid < 0) {
        fork_errno = errno;
        break;
      }
      taken[slot] = true;
      const auto limit = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(run.spec.timeout_seconds));
      running.push_back({pid, next++, slot, started, started + limit, open_pidfd(pid)});
    }
    if (running.empty()) break;
    int raw = 0;
    const std::optional<std::size_t> at = wait_for_an_end(running, &raw, nap);
    if (!at) continue;
    const Running run = running[*at];
    if (run.pidfd >= 0) close(run.pidfd);
    running.erase(running.begin() + static_cast<std::ptrdiff_t>(*at));
    taken[run.slot] = false;
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

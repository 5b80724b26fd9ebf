#include "process_group.h"

#include "process.h"

#include <dirent.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace verbfault::cli {

namespace {

using Clock = std::chrono::steady_clock;

// The processes below `root` now (children, their children ...), from
// /proc/PID/stat's ppid: verbfault ends a process with what it started.
std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* proc = opendir("/proc")) {
    while (const dirent* entry = readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (end == entry->d_name || *end != '\0') continue;
      std::ifstream in(std::string("/proc/") + entry->d_name + "/stat");
      std::string stat;
      std::getline(in, stat);
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      const std::size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 1));
      std::string state;
      long ppid = 0;
      if (rest >> state >> ppid) children.emplace(static_cast<pid_t>(ppid), pid);
    }
    closedir(proc);
  }
  std::vector<pid_t> found;
  std::vector<pid_t> todo = {root};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    const auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      found.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return found;
}

// The whole tree at once, found before any of it is signalled (a parent
// that dies first would hand its children to init).
void signal_tree(pid_t root, int signal) {
  const std::vector<pid_t> below = descendants(root);
  kill(root, signal);
  for (pid_t pid : below) kill(pid, signal);
}

pid_t start(const GroupMember& member, const sigset_t& original_mask,
            const struct sigaction& original_chld) {
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // The child as run_program's: our mask and SIGCHLD as they were.
  sigaction(SIGCHLD, &original_chld, nullptr);
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  // verbfault killed outright (SIGKILL) must not leave the run behind.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(kExitCannotExecute);
  for (const auto& [name, value] : member.environment) setenv(name.c_str(), value.c_str(), 1);
  // Same addresses every run: applications use pointers as wr_id.
  personality(ADDR_NO_RANDOMIZE);
  std::vector<char*> args;
  for (const std::string& arg : member.argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const int error = errno;
  std::fprintf(stderr, "verbfault: cannot run '%s': %s\n", member.argv[0].c_str(),
               std::strerror(error));
  _exit(error == ENOENT ? kExitNotFound : kExitCannotExecute);
}

Clock::time_point after(Clock::time_point from, double seconds) {
  return from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

std::vector<MemberEnd> run_group(const std::vector<GroupMember>& members,
                                 const GroupOptions& options) {
  // Signals are taken with sigtimedwait: a child's end, or ^C / kill, is
  // seen at once, with no handler and no race between a check and a wait.
  sigset_t watched, original_mask;
  sigemptyset(&watched);
  for (int signal : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&watched, signal);
  sigprocmask(SIG_BLOCK, &watched, &original_mask);
  // SIGCHLD ignored (inherited) would reap the children before us.
  struct sigaction default_chld = {};
  struct sigaction original_chld = {};
  default_chld.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &default_chld, &original_chld);

  struct Member {
    MemberEnd end;
    bool running = false;
    std::optional<Clock::time_point> kill_at;  // SIGKILL then, once ended by us
  };
  std::vector<Member> state(members.size());
  const Clock::time_point begun = Clock::now();
  for (std::size_t i = 0; i < members.size(); ++i) {
    Member& m = state[i];
    m.end.pid = start(members[i], original_mask, original_chld);
    if (m.end.pid < 0) {
      std::fprintf(stderr, "verbfault: fork: %s\n", std::strerror(errno));
      m.end.status = kExitCannotExecute;
      continue;
    }
    m.running = true;
  }

  std::optional<Clock::time_point> grace_at;
  bool grace_over = false;
  const std::optional<Clock::time_point> timeout_at =
      options.timeout_seconds ? std::optional(after(begun, *options.timeout_seconds))
                              : std::nullopt;
  bool timed_out = false;
  auto running = [&] {
    std::size_t count = 0;
    for (const Member& m : state) count += m.running ? 1 : 0;
    return count;
  };
  auto end_running = [&](MemberEnd::By by) {
    for (Member& m : state) {
      if (!m.running || m.kill_at) continue;
      m.end.by = by;
      signal_tree(m.end.pid, SIGTERM);
      m.kill_at = after(Clock::now(), kKillDelaySeconds);
    }
  };
  // A failure with others still running starts the grace (once).
  auto failed = [&](std::size_t index) {
    const MemberEnd& end = state[index].end;
    if (end.status == 0 || end.by != MemberEnd::By::itself || grace_at || running() == 0) return;
    grace_at = after(Clock::now(), options.peer_grace_seconds);
    const std::size_t others = running();
    std::fprintf(stderr,
                 "verbfault: process %zu (%s) failed: %s; ending the %zu other%s still running "
                 "in %g s (--peer-grace) unless %s before\n",
                 index, members[index].name.c_str(), describe_status(end.status).c_str(), others,
                 others == 1 ? "" : "s", options.peer_grace_seconds,
                 others == 1 ? "it ends" : "they end");
  };
  for (std::size_t i = 0; i < state.size(); ++i)
    if (!state[i].running) failed(i);

  while (running() > 0) {
    // The nearest deadline bounds the wait.
    std::optional<Clock::time_point> next;
    auto consider = [&](const std::optional<Clock::time_point>& at) {
      if (at && (!next || *at < *next)) next = at;
    };
    if (!timed_out) consider(timeout_at);
    if (!grace_over) consider(grace_at);
    for (const Member& m : state)
      if (m.running) consider(m.kill_at);
    siginfo_t info{};
    int signal = -1;
    if (next) {
      const auto left = std::max(Clock::duration::zero(), *next - Clock::now());
      const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      const timespec wait{static_cast<time_t>(nanoseconds / 1000000000),
                          static_cast<long>(nanoseconds % 1000000000)};
      signal = sigtimedwait(&watched, &info, &wait);
    } else {
      signal = sigwaitinfo(&watched, &info);
    }
    if (signal == SIGINT || signal == SIGTERM) {
      for (Member& m : state)
        if (m.running) signal_tree(m.end.pid, signal);
    }
    // Reap whatever ended (one SIGCHLD may stand for several), all of it
    // before a failure among them counts the others still running.
    std::vector<std::size_t> ended;
    for (;;) {
      int raw = 0;
      const pid_t pid = waitpid(-1, &raw, WNOHANG);
      if (pid <= 0) break;
      for (std::size_t i = 0; i < state.size(); ++i) {
        Member& m = state[i];
        if (!m.running || m.end.pid != pid) continue;
        m.running = false;
        m.end.status = WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : WEXITSTATUS(raw);
        ended.push_back(i);
      }
    }
    for (std::size_t i : ended) failed(i);
    const Clock::time_point now = Clock::now();
    if (timeout_at && !timed_out && now >= *timeout_at && running() > 0) {
      timed_out = true;
      std::fprintf(stderr,
                   "verbfault: timeout: %g s passed (--timeout): ending the %zu process%s still "
                   "running\n",
                   *options.timeout_seconds, running(), running() == 1 ? "" : "es");
      end_running(MemberEnd::By::timeout);
    }
    if (grace_at && !grace_over && now >= *grace_at) {
      grace_over = true;
      end_running(MemberEnd::By::peer_grace);
    }
    for (Member& m : state)
      if (m.running && m.kill_at && now >= *m.kill_at) {
        signal_tree(m.end.pid, SIGKILL);
        m.kill_at = after(now, kKillDelaySeconds);  // again, should it linger
      }
  }

  // A ^C that came after the last end is not for us to die of.
  const timespec none{0, 0};
  sigset_t forwarded;
  sigemptyset(&forwarded);
  sigaddset(&forwarded, SIGINT);
  sigaddset(&forwarded, SIGTERM);
  while (sigtimedwait(&forwarded, nullptr, &none) > 0) {
  }
  sigaction(SIGCHLD, &original_chld, nullptr);
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);

  std::vector<MemberEnd> ends;
  for (const Member& m : state) ends.push_back(m.end);
  return ends;
}

}  // namespace verbfault::cli

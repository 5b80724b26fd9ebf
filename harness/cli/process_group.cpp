#include "process_group.h"

#include "process.h"
#include "stack_shape.h"

#include <dirent.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace verbfault::cli {

namespace {

using Clock = std::chrono::steady_clock;

// How often a member waiting for its turn looks whether the one before
// listens: a few /proc reads, cheap against a program's start.
constexpr double kListenPollSeconds = 0.005;

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

// The inodes of the sockets of `root` and its descendants (/proc/PID/fd
// links "socket:[INODE]"): a server may be a shell's child.
std::set<unsigned long> socket_inodes(pid_t root) {
  std::set<unsigned long> inodes;
  std::vector<pid_t> pids = descendants(root);
  pids.push_back(root);
  for (pid_t pid : pids) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* fds = opendir(dir.c_str());
    if (fds == nullptr) continue;
    while (const dirent* entry = readdir(fds)) {
      char link[64];
      const ssize_t length = readlink((dir + "/" + entry->d_name).c_str(), link, sizeof link - 1);
      if (length <= 0) continue;
      link[length] = '\0';
      unsigned long inode = 0;
      if (std::sscanf(link, "socket:[%lu]", &inode) == 1) inodes.insert(inode);
    }
    closedir(fds);
  }
  return inodes;
}

// Whether one of `inodes` listens for connections in our network
// namespace: TCP or TCP6 in state 0A (LISTEN), or a UNIX stream socket
// with __SO_ACCEPTCON (flags 00010000). The local fabric's own listener
// ("@verbfault/<fabric>/<index>") does not count: every simulated device
// opens one, before its program is ready for a peer.
bool listens(const std::set<unsigned long>& inodes) {
  if (inodes.empty()) return false;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout;
      unsigned long inode = 0;
      if (fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
              timeout >> inode &&
          state == "0A" && inodes.count(inode) != 0)
        return true;
    }
  }
  std::ifstream unix_sockets("/proc/net/unix");
  std::string line;
  std::getline(unix_sockets, line);  // the header
  while (std::getline(unix_sockets, line)) {
    // Num RefCount Protocol Flags Type St Inode [Path]
    std::istringstream fields(line);
    std::string num, references, protocol, state, path;
    unsigned long flags = 0, type = 0, inode = 0;
    if (!(fields >> num >> references >> protocol >> std::hex >> flags >> type >> state >>
          std::dec >> inode))
      continue;
    fields >> path;
    if ((flags & 0x10000) != 0 && inodes.count(inode) != 0 && path.rfind("@verbfault/", 0) != 0)
      return true;
  }
  return false;
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
  if (getppid() != parent) _exit(exit_status::kCannotExecute);
  for (const auto& [name, value] : member.environment) setenv(name.c_str(), value.c_str(), 1);
  // Same addresses every run: applications use pointers as wr_id.
  personality(ADDR_NO_RANDOMIZE);
  // Stack addresses too, whatever the settings (stack_shape.h).
  pad_environment_to_fixed_shape();
  std::vector<char*> args;
  for (const std::string& arg : member.argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const int error = errno;
  std::fprintf(stderr, "verbfault: cannot run '%s': %s\n", member.argv[0].c_str(),
               std::strerror(error));
  _exit(error == ENOENT ? exit_status::kNotFound : exit_status::kCannotExecute);
}

Clock::time_point after(Clock::time_point from, double seconds) {
  return from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

double parse_start_wait(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text.c_str(), &end);
  // strtod skips leading spaces: " 5" would pass where "5 " does not.
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())) ||
      end != text.c_str() + text.size() || errno != 0 || !std::isfinite(seconds) || seconds < 0)
    throw std::invalid_argument("--start-wait '" + text +
                                "': expected seconds, a number >= 0 (0: start every command at "
                                "once)");
  return seconds;
}

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
  // A failure, the timeout or a signal: the run is ending, nobody more starts.
  bool ending = false;
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
  // A failure with others still running starts the grace (once); so does
  // the end of the last command, the final client, when servers started
  // before it still run (a server such as qperf's serves until killed).
  auto failed = [&](std::size_t index) {
    const MemberEnd& end = state[index].end;
    if (end.status != 0 && end.by == MemberEnd::By::itself) ending = true;
    if (end.status == 0 && end.by == MemberEnd::By::itself && index + 1 == state.size() &&
        !grace_at && running() > 0 && state.size() > 1) {
      grace_at = after(Clock::now(), options.peer_grace_seconds);
      const std::size_t others = running();
      std::fprintf(stderr,
                   "verbfault: process %zu (%s), the last started, ended; ending the %zu "
                   "other%s still running in %g s (--peer-grace) unless %s before\n",
                   index, members[index].name.c_str(), others, others == 1 ? "" : "s",
                   options.peer_grace_seconds, others == 1 ? "it ends" : "they end");
      return;
    }
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
  // The members start one at a time (process_group.h): `started` of them
  // so far; the last of them has until `ready_by` to be ready for the next.
  std::size_t started = 0;
  std::optional<Clock::time_point> ready_by;
  auto start_next = [&] {
    const std::size_t i = started++;
    Member& m = state[i];
    m.end.pid = start(members[i], original_mask, original_chld);
    ready_by = after(Clock::now(), options.start_wait_seconds);
    if (m.end.pid >= 0) {
      m.running = true;
      return;
    }
    std::fprintf(stderr, "verbfault: fork: %s\n", std::strerror(errno));
    m.end.status = exit_status::kCannotExecute;
    failed(i);
  };
  // Starts the next members whose turn has come; false while one waits.
  auto start_ready = [&] {
    while (started < state.size() && !ending) {
      const std::size_t last = started > 0 ? started - 1 : 0;
      if (started > 0 && state[last].running && options.start_wait_seconds > 0 &&
          !listens(socket_inodes(state[last].end.pid))) {
        if (Clock::now() < *ready_by) return false;
        std::fprintf(stderr,
                     "verbfault: process %zu (%s) is not listening after %g s (--start-wait); "
                     "starting process %zu anyway\n",
                     last, members[last].name.c_str(), options.start_wait_seconds, started);
      }
      start_next();
    }
    return true;
  };

  for (;;) {
    const bool waiting = !start_ready();
    if (running() == 0 && !waiting) break;
    // The nearest deadline bounds the wait; while a member waits for its
    // turn, a few milliseconds do: listening is polled, no signal says it.
    std::optional<Clock::time_point> next;
    auto consider = [&](const std::optional<Clock::time_point>& at) {
      if (at && (!next || *at < *next)) next = at;
    };
    if (waiting) consider(std::min(*ready_by, after(Clock::now(), kListenPollSeconds)));
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
      ending = true;
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
      ending = true;
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
  for (std::size_t i = 0; i < state.size(); ++i) {
    ends.push_back(state[i].end);
    if (i >= started) ends.back().by = MemberEnd::By::not_started;
  }
  return ends;
}

}  // namespace verbfault::cli

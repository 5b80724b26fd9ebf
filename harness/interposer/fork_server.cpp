#include "fork_server.h"

#include "process_threads.h"
#include "signal_safe_line.h"
#include "thread_calls.h"
#include "verbfault/exit_status.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace verbfault::interposer {

std::atomic<bool> g_fork_server_waiting{false};

namespace {

// Everything here runs before the seed's run exists, in a process whose
// heap the children inherit: nothing allocates from it (stack buffers,
// raw system calls, and one mapping of our own for the requests), so a
// child's heap is what the program's own calls made it, as in a run that
// started from exec.

int g_socket = -1;   // the harness's end of VERBFAULT_FORK_SERVER
pid_t g_server = 0;  // the process that was exec'd (its forked children are not servers)

constexpr std::size_t kRequestBytes = std::size_t{1} << 20;

void send_text(const char* text) {
  (void)::send(g_socket, text, std::strlen(text), MSG_NOSIGNAL);
}

// "<word> <a> <b>" into `out`.
void format(char* out, std::size_t size, const char* word, unsigned long long a, long long b) {
  std::snprintf(out, size, "%s %llu %lld", word, a, b);
}

// Why the children could not each be this process as a fresh start would
// make it (nothing: they can). `why` holds the reason.
bool unsound(char* why, std::size_t size) {
  // A thread joined a moment ago (the harness's own, which made the
  // process's run at load) is counted until the kernel has released it:
  // pthread_join returns at the thread's exit futex, before its task is
  // gone from /proc. A few looks, 1 ms apart, before a second thread
  // counts (found under ASan, where threads end slower).
  int threads = process_thread_count();
  for (int looks = 0; threads > 1 && looks < 100; ++looks) {
    const timespec pause{0, 1'000'000};
    (void)syscall(SYS_nanosleep, &pause, nullptr);
    threads = process_thread_count();
  }
  if (threads != 1) {
    std::snprintf(why, size,
                  threads < 0 ? "cannot read /proc/self/stat to count its threads"
                              : "it runs %d threads before its first verbs call (a fork keeps "
                                "only the caller)",
                  threads);
    return true;
  }
  // proc(5) /proc/pid/task/tid/children: the children of the one thread.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/children", static_cast<int>(getpid()));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::snprintf(why, size, "cannot read %s to see whether it started other processes", path);
    return true;
  }
  char children[64];
  const ssize_t n = ::read(fd, children, sizeof children - 1);
  ::close(fd);
  if (n > 0) {
    children[n] = '\0';
    std::snprintf(why, size,
                  "it started another process (pid %d) before its first verbs call: every "
                  "seed's run would share it",
                  std::atoi(children));
    return true;
  }
  // A lock, sleep, wait or clock read of the program's (threads/
  // thread_calls.h): from exec, under a seed, the schedule counts it from
  // load (its steps, its virtual clock); here it was the machine's.
  if (const void* call = thread_calls::first_unscheduled_call()) {
    Dl_info info{};
    const bool named = dladdr(call, &info) != 0;
    std::snprintf(why, size,
                  "it made a call a seed's schedule counts (a lock, sleep, wait or clock read) "
                  "before its first verbs call, from %s%s%s: its children would not start where "
                  "a run from exec does",
                  named && info.dli_sname != nullptr ? info.dli_sname : "",
                  named && info.dli_sname != nullptr ? " in " : "",
                  named && info.dli_fname != nullptr ? info.dli_fname : "an unknown object");
    return true;
  }
  // An open socket (a peer, a PMI or launcher connection, a name
  // server's): every child would share its one connection.
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    std::snprintf(why, size, "cannot list /proc/self/fd to see its open sockets");
    return true;
  }
  alignas(8) char entries[4096];
  bool found = false;
  for (long got; !found && (got = syscall(SYS_getdents64, dir, entries, sizeof entries)) > 0;) {
    for (long at = 0; at < got && !found;) {
      struct Entry {
        std::uint64_t inode;
        std::int64_t offset;
        unsigned short length;
        unsigned char type;
        char name[1];
      };
      const auto* entry = reinterpret_cast<const Entry*>(entries + at);
      at += entry->length;
      if (entry->name[0] < '0' || entry->name[0] > '9') continue;
      const int open_fd = std::atoi(entry->name);
      struct stat status {};
      if (open_fd == g_socket || open_fd == dir || ::fstat(open_fd, &status) != 0 ||
          !S_ISSOCK(status.st_mode))
        continue;
      std::snprintf(why, size,
                    "it has a socket open (fd %d) before its first verbs call: every seed's run "
                    "would share it",
                    open_fd);
      found = true;
    }
  }
  ::close(dir);
  return found;
}

// The request's environment in place of this process's: the server's own
// with each NAME=VALUE of `text` (`length` bytes of NUL-ended strings) set,
// and VERBFAULT_FORK_SERVER gone. The table is `table` (room for
// `capacity` pointers, in the requests' mapping: no heap) and its strings
// are the server's and the request's. Like the stack a fresh exec puts
// them on, environ is then not one setenv(3) allocated: a later setenv by
// the program copies it, as after an exec.
void take_environment(char* text, std::size_t length, char** table, std::size_t capacity) {
  std::size_t count = 0;
  auto same_name = [](const char* entry, const char* assignment) {
    const char* equals = std::strchr(assignment, '=');
    if (equals == nullptr) return false;
    const auto name = static_cast<std::size_t>(equals - assignment);
    return std::strncmp(entry, assignment, name) == 0 && entry[name] == '=';
  };
  for (char** at = environ; at != nullptr && *at != nullptr && count + 1 < capacity; ++at) {
    if (std::strncmp(*at, "VERBFAULT_FORK_SERVER=", 22) == 0) continue;
    bool replaced = false;
    for (std::size_t i = 0; i < length && !replaced; i += std::strlen(text + i) + 1)
      replaced = same_name(*at, text + i);
    if (!replaced) table[count++] = *at;
  }
  for (std::size_t i = 0; i < length && count + 1 < capacity; i += std::strlen(text + i) + 1)
    if (std::strchr(text + i, '=') != nullptr) table[count++] = text + i;
  table[count] = nullptr;
  environ = table;
}

[[noreturn]] void stop(const char* line) {
  SignalSafeLine().text("verbfault: VERBFAULT_FORK_SERVER: ").text(line).write_to(2);
  std::_Exit(exit_status::kUsage);
}

}  // namespace

void arm_fork_server() noexcept {
  const char* value = std::getenv("VERBFAULT_FORK_SERVER");
  if (value == nullptr) return;
  char* end = nullptr;
  const long fd = std::strtol(value, &end, 10);
  struct stat status {};
  if (end == value || *end != '\0' || fd < 0 || fd > 65535 ||
      ::fstat(static_cast<int>(fd), &status) != 0 || !S_ISSOCK(status.st_mode))
    stop("expected the number of an open socket (it is set by verbfault sweep and conform)");
  g_socket = static_cast<int>(fd);
  // Not for what the program execs.
  (void)::fcntl(g_socket, F_SETFD, FD_CLOEXEC);
  g_server = getpid();
  thread_calls::note_unscheduled_calls(true);
  g_fork_server_waiting.store(true, std::memory_order_relaxed);
}

void serve_seeds() noexcept {
  bool expected = true;
  if (!g_fork_server_waiting.compare_exchange_strong(expected, false)) return;
  // What the program did before this call is known now: later calls are
  // the children's runs' (or, refused, this process's) and cost nothing.
  thread_calls::note_unscheduled_calls(false);
  char line[512];
  if (getpid() != g_server) {
    // A child the program forked reached the harness first: the program
    // is not one process up to its first verbs call.
    send_text("refused it forked a child process that made the first verbs call");
    return;
  }
  char why[400];
  if (unsound(why, sizeof why)) {
    std::snprintf(line, sizeof line, "refused %s", why);
    send_text(line);
    ::close(g_socket);
    // The harness ends this process; it goes on without a seed meanwhile.
    return;
  }
  void* mapped =
      mmap(nullptr, kRequestBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    send_text("refused cannot map a buffer for requests");
    return;
  }
  char* request = static_cast<char*>(mapped);
  // Output the program buffered so far (stdout to a file) stays in its
  // buffer: each child inherits it and writes it where, and when, a run
  // from exec would have.
  send_text("ready");
  for (;;) {
    // "run <id> <pgid>\0NAME=VALUE\0..." with three descriptors.
    iovec data{request, kRequestBytes / 2};
    alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))];
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t got;
    do got = ::recvmsg(g_socket, &message, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    if (got <= 0) std::_Exit(0);  // the harness is done with us
    int fds[3] = {-1, -1, -1};
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        std::memcpy(fds, CMSG_DATA(c), std::min(sizeof fds, c->cmsg_len - CMSG_LEN(0)));
    request[got] = '\0';
    unsigned long long id = 0;
    long long group = 0;
    if (std::sscanf(request, "run %llu %lld", &id, &group) != 2 || fds[2] < 0) {
      send_text("refused a request that is not 'run <id> <pgid>' with three descriptors");
      std::_Exit(exit_status::kUsage);
    }
    const std::size_t header = std::strlen(request) + 1;
    const pid_t child = fork();
    if (child == 0) {
      ::close(g_socket);
      g_socket = -1;
      setpgid(0, static_cast<pid_t>(group));
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (int i = 0; i < 3; ++i) {
        ::dup2(fds[i], i);
        if (fds[i] > 2) ::close(fds[i]);
      }
      // The second half of the mapping holds the table.
      take_environment(request + header, static_cast<std::size_t>(got) - header,
                       reinterpret_cast<char**>(request + kRequestBytes / 2),
                       kRequestBytes / 2 / sizeof(char*));
      return;
    }
    for (int fd : fds) ::close(fd);
    if (child < 0) {
      format(line, sizeof line, "end", id, 128 + SIGKILL);
      send_text(line);
      continue;
    }
    setpgid(child, static_cast<pid_t>(group));  // as the child does: whichever runs first
    format(line, sizeof line, "pid", id, child);
    send_text(line);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    format(line, sizeof line, "end", id, status);
    send_text(line);
  }
}

}  // namespace verbfault::interposer

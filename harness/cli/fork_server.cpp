#include "fork_server.h"

#include "preload_line.h"
#include "process.h"
#include "stack_shape.h"
#include "verbfault/exit_status.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

extern char** environ;

namespace verbfault::cli {

ForkServer* g_seed_server = nullptr;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The next message, waiting until `deadline`: its text, or "" when the
// deadline passed, or nothing (std::nullopt) when the server is gone.
std::optional<std::string> receive(int socket, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd fd{socket, POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::string();
    char text[1024];
    const ssize_t got = recv(socket, text, sizeof text - 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;
    return std::string(text, static_cast<std::size_t>(got));
  }
}

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int decode(int raw) {
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

}  // namespace

std::unique_ptr<ForkServer> ForkServer::start(const std::vector<std::string>& command,
                                              const std::string& library,
                                              const std::vector<engine::Setting>& settings,
                                              const fs::path& prefix_log, double timeout_seconds,
                                              std::string& why) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    why = std::string("socketpair: ") + std::strerror(errno);
    return nullptr;
  }
  // A request holds the seed's whole environment.
  const int bytes = 1 << 20;
  setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    close(ends[0]);
    close(ends[1]);
    return nullptr;
  }
  if (pid == 0) {
    // A group of its own: a seed's timeout kills the seed's group, not it.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(exit_status::kCannotExecute);
    const int log = open(prefix_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    const int server_end = dup(ends[1]);  // without FD_CLOEXEC: the program keeps it
    // The seeds' settings, except what makes a seed's run: each child
    // takes those from its request.
    for (const auto& [name, value] : settings) setenv(name.c_str(), value.c_str(), 1);
    for (const char* name : {"VERBFAULT_SEED", "VERBFAULT_PLAN", "VERBFAULT_FAULTS",
                             "VERBFAULT_TRACE", "VERBFAULT_THREADS", "VERBFAULT_STARTED",
                             "VERBFAULT_SUMMARY", "VERBFAULT_FINDINGS", "VERBFAULT_REPRODUCE"})
      unsetenv(name);
    setenv("LD_PRELOAD", preload_line(library, std::getenv("LD_PRELOAD")).c_str(), 1);
    setenv("VERBFAULT_FORK_SERVER", std::to_string(server_end).c_str(), 1);
    // The same addresses as a run from exec (process.h).
    personality(ADDR_NO_RANDOMIZE);
    // Stack addresses too, whatever the settings (stack_shape.h).
    pad_environment_to_fixed_shape();
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(errno == ENOENT ? exit_status::kNotFound : exit_status::kCannotExecute);
  }
  close(ends[1]);
  std::unique_ptr<ForkServer> server(new ForkServer);
  server->socket_ = ends[0];
  server->pid_ = pid;
  server->prefix_log_ = prefix_log;
  const std::optional<std::string> answer = receive(ends[0], after(timeout_seconds));
  if (answer && *answer == "ready") return server;
  if (!answer) {
    int raw = 0;
    const bool ended = waitpid(pid, &raw, 0) == pid;
    server->pid_ = -1;
    why = ended ? "the program ended (" + describe_status(decode(raw)) +
                      ") before its first verbs call"
                : "the program ended before its first verbs call";
  } else if (answer->empty()) {
    why = "the program made no verbs call within the timeout";
  } else if (answer->rfind("refused ", 0) == 0) {
    why = answer->substr(8);
  } else {
    why = "unexpected answer '" + *answer + "'";
  }
  return nullptr;  // the destructor ends it
}

ForkServer::~ForkServer() {
  if (socket_ >= 0) close(socket_);
  if (pid_ <= 0) return;
  // Closing the socket ends a server waiting for a request; one that
  // refused goes on without a seed, and is ended here.
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

MemberEnd ForkServer::run(const GroupMember& member, const GroupOptions& options) {
  MemberEnd end;
  // What the program printed before its first verbs call, where a run
  // from exec would have printed it.
  {
    std::fflush(nullptr);
    std::ifstream prefix(prefix_log_, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(prefix)), std::istreambuf_iterator<char>());
    for (std::size_t at = 0; at < text.size();) {
      const ssize_t wrote = write(STDOUT_FILENO, text.data() + at, text.size() - at);
      if (wrote <= 0 && errno != EINTR) break;
      if (wrote > 0) at += static_cast<std::size_t>(wrote);
    }
  }
  // "run <id> <pgid>" then this process's environment with the member's on top.
  const std::uint64_t id = (static_cast<std::uint64_t>(getpid()) << 20) + ++requests_;
  std::string request = "run " + std::to_string(id) + " " + std::to_string(getpgrp());
  request.push_back('\0');
  for (char** at = environ; *at != nullptr; ++at) {
    const char* equals = std::strchr(*at, '=');
    if (equals == nullptr ||
        member.environment.count(std::string(*at, static_cast<std::size_t>(equals - *at))) != 0)
      continue;
    request += *at;
    request.push_back('\0');
  }
  for (const auto& [name, value] : member.environment) {
    request += name + "=" + value;
    request.push_back('\0');
  }
  iovec data{request.data(), request.size()};
  const int fds[3] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&message);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (sendmsg(socket_, &message, MSG_NOSIGNAL) < 0) {
    std::fprintf(stderr, "verbfault: the fork server of %s: cannot send a request: %s\n",
                 member.name.c_str(), std::strerror(errno));
    end.status = exit_status::kCannotExecute;
    return end;
  }
  const std::string pid_word = "pid " + std::to_string(id) + " ";
  const std::string end_word = "end " + std::to_string(id) + " ";
  // The next step of ending it: SIGTERM at the timeout (the harness
  // writes its trace there), SIGKILL kKillDelaySeconds after each signal.
  Clock::time_point next_signal =
      options.timeout_seconds ? after(*options.timeout_seconds) : Clock::time_point::max();
  bool terminated = false;
  for (;;) {
    const Clock::time_point deadline =
        end.pid > 0 && next_signal != Clock::time_point::max() ? next_signal : after(3600 * 24);
    const std::optional<std::string> answer = receive(socket_, deadline);
    if (!answer) {
      std::fprintf(stderr, "verbfault: the fork server of %s ended during the run\n",
                   member.name.c_str());
      end.status = 128 + SIGKILL;
      return end;
    }
    if (answer->rfind(pid_word, 0) == 0) {
      end.pid = static_cast<pid_t>(std::stol(answer->substr(pid_word.size())));
    } else if (answer->rfind(end_word, 0) == 0) {
      end.status = decode(std::stoi(answer->substr(end_word.size())));
      return end;
    } else if (answer->empty() && end.pid > 0 && Clock::now() >= next_signal) {
      end.by = MemberEnd::By::timeout;
      kill(end.pid, terminated ? SIGKILL : SIGTERM);
      terminated = true;
      next_signal = after(kKillDelaySeconds);
    }
    // Anything else is an earlier request's (a seed killed before its end
    // was read): not this one's.
  }
}

}  // namespace verbfault::cli

#include "bounded.h"

#include "verbs_kit.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace verbfault::probe {

Bounded run_bounded(const std::function<void(int fd)>& body, int timeout_ms) {
  Bounded out;
  int fds[2];
  if (pipe(fds) != 0) {
    out.exit_status = 125;
    return out;
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    out.exit_status = 125;
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    body(fds[1]);
    std::fflush(nullptr);
    // _exit: no destructors of objects a provider may still be using.
    _exit(0);
  }
  close(fds[1]);
  const int64_t deadline = now_ms() + timeout_ms;
  char chunk[4096];
  for (;;) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      out.timed_out = true;
      break;
    }
    const ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is done (or died)
    out.output.append(chunk, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (out.timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) out.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

}  // namespace verbfault::probe

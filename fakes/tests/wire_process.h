// Helpers for the wire's tests and measurements, which run members of one
// fabric in forked processes: a child with a timeout, a pipe to signal
// between parent and child, a fabric name of the test's own.
#pragma once

#include "wire/endpoint.h"
#include "wire/fabric_name.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

namespace verbfault::sim::wire::testing {

// A fabric name no other test process uses (ctest runs tests in parallel),
// with its status table file removed when this goes.
class ScratchFabric {
 public:
  explicit ScratchFabric(const std::string& what)
      : name_("wt" + std::to_string(getpid()) + "-" + what) {
    ::unlink(status_table_path(name_).c_str());
  }
  ~ScratchFabric() { ::unlink(status_table_path(name_).c_str()); }
  ScratchFabric(const ScratchFabric&) = delete;
  ScratchFabric& operator=(const ScratchFabric&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// Before the fabric exists (the first sim::devices() makes it): this
// process joins a fabric of its own, named after `what` on the first call,
// as member 0; its status table file goes at exit. For a test process
// whose devices are one process's own (ctest runs others at once, which
// may hold index 0 of the default fabric).
inline void join_scratch_fabric(const char* what) {
  static const ScratchFabric fabric(what);
  static const bool set = [] {
    setenv("VERBFAULT_FABRIC", fabric.name().c_str(), 1);
    setenv("VERBFAULT_PROC", "0", 1);
    return true;
  }();
  (void)set;
}

// In a child: a failed check ends the child with a message and exit code 3
// (GoogleTest's assertions mean nothing there).
#define CHILD_CHECK(condition)                                                                \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "child %d: %s:%d: check failed: %s\n", static_cast<int>(getpid()), \
                   __FILE__, __LINE__, #condition);                                           \
      _exit(3);                                                                               \
    }                                                                                         \
  } while (0)

// A forked child; killed and reaped when this goes without wait() (a test
// that failed half-way must not leave members behind).
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(Child&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

  // The exit code; 128 + signal when killed; -1 after `seconds` (then it
  // is killed).
  int wait(double seconds = 60) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
        return -1;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

 private:
  pid_t pid_;
};

// Runs `body` in a forked child, which _exits with its result.
template <typename Body>
Child spawn(Body&& body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  return Child(pid);
}

// Polls `condition` until it holds or `seconds` pass.
template <typename Condition>
bool eventually(Condition&& condition, double seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// A one-way pipe carrying single bytes, created before fork().
class Signal {
 public:
  Signal() {
    if (pipe2(fds_, O_CLOEXEC) != 0) std::abort();
  }
  ~Signal() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

  void post(char c = '.') {
    if (::write(fds_[1], &c, 1) != 1) std::abort();
  }
  // The next byte, or 0 after `seconds`.
  char wait(double seconds = 30) {
    pollfd ready{fds_[0], POLLIN, 0};
    if (poll(&ready, 1, static_cast<int>(seconds * 1000)) != 1) return 0;
    char c = 0;
    return ::read(fds_[0], &c, 1) == 1 ? c : 0;
  }

 private:
  int fds_[2];
};

}  // namespace verbfault::sim::wire::testing

#include "device_nap.h"

#include "fabric.h"

#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

namespace verbfault::sim {

namespace {

// The calling thread's timer (CLOCK_MONOTONIC, close-on-exec), made on its
// first nap and closed when the thread ends; -1 if none could be made.
struct ThreadTimer {
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  ~ThreadTimer() {
    if (fd >= 0) ::close(fd);
  }
};

int thread_timer() {
  thread_local ThreadTimer timer;
  return timer.fd;
}

// The timers of the threads napping now. Guarded by Fabric::mutex; never
// destroyed (a napping thread may outlive static destruction at exit).
std::vector<int>& napping() {
  static auto* fds = new std::vector<int>();
  return *fds;
}

void arm(int fd, std::chrono::nanoseconds after) {
  itimerspec spec{};
  const auto ns = std::max<std::int64_t>(after.count(), 1);  // 0 would disarm it
  spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  timerfd_settime(fd, 0, &spec, nullptr);
}

}  // namespace

Nap nap_in_device(std::unique_lock<std::mutex>& guard, std::chrono::microseconds most) {
  const int fd = thread_timer();
  if (fd < 0) {
    // No timer (out of fds): a plain sleep of the whole nap, unwoken. Not
    // Fabric::wakeup's wait_for, whose deadline is read on steady_clock,
    // the program's virtual clock under the harness (real_clock.h).
    guard.unlock();
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(most).count();
    const timespec sleep{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    const long slept = syscall(SYS_nanosleep, &sleep, nullptr);
    const int error = errno;
    guard.lock();
    return slept < 0 && error == EINTR ? Nap::kInterrupted : Nap::kDone;
  }
  // Armed and listed under the lock, so that no wake is lost between the
  // caller's look and the read.
  arm(fd, most);
  napping().push_back(fd);
  guard.unlock();
  std::uint64_t expirations = 0;
  // The system call itself: the C library's read is the front door's
  // export, which a harnessed program's scheduler would see.
  const long got = syscall(SYS_read, fd, &expirations, sizeof expirations);
  const int error = errno;
  guard.lock();
  std::vector<int>& fds = napping();
  fds.erase(std::find(fds.begin(), fds.end(), fd));
  return got < 0 && error == EINTR ? Nap::kInterrupted : Nap::kDone;
}

void wake_napping_threads() {
  for (int fd : napping()) arm(fd, std::chrono::nanoseconds(1));
}

}  // namespace verbfault::sim

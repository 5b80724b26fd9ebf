// The wall clock of the device's own timings (a wait's grace period, a
// destroy's patience, a drain's deadline), read by the system call. Under
// the harness the C library's clock_gettime, which std::chrono::
// steady_clock reads, is the program's virtual clock for a thread the
// thread scheduler manages: it stands still while the thread waits in the
// device, and a grace period counted on it would never end.
#pragma once

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>

namespace verbfault::sim::wire {

struct RealClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<RealClock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec now{};
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
    return time_point(duration(std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec));
  }
};

}  // namespace verbfault::sim::wire

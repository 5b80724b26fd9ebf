// 50 ms of start-up before main: linked into a copy of the sample
// (sample_rc_slow_start), it stands for a program whose start-up is heavy
// (many libraries to load and relocate, static constructors, a runtime to
// initialize) before its first verbs call. Busy work timed by the kernel's
// clock through syscall(2): under a seed the harness's thread scheduler
// keeps time itself (a sleep or a libc clock read would cost nothing), and
// start-up is work, not waiting.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <ctime>

namespace {

std::int64_t monotonic_ns() {
  timespec now{};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

[[gnu::constructor]] void start_up_slowly() {
  const std::int64_t until = monotonic_ns() + 50'000'000;
  while (monotonic_ns() < until) {
  }
}

}  // namespace

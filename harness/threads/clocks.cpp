// The virtual clocks: the sleeps and the clock reads of a scheduled
// thread go by the scheduler's clock, which starts at fixed origins
// (thread_world.h) and moves only when every thread waits.
#include "thread_world.h"

#include <sys/time.h>

namespace verbfault::interposer::thread_calls {

int nanosleep(const timespec* request, timespec* remaining, const void* caller) {
  if (!scheduled_pause(caller) || request == nullptr)
    return libc::for_caller(caller).nanosleep(request, remaining);
  if (request->tv_sec < 0 || request->tv_nsec < 0 || request->tv_nsec >= static_cast<long>(kNs)) {
    errno = EINVAL;
    return -1;
  }
  sleep_for(ns_of(*request), "nanosleep");
  if (remaining != nullptr) *remaining = {0, 0};
  return 0;
}

int clock_nanosleep(clockid_t clock, int flags, const timespec* request, timespec* remaining,
                    const void* caller) {
  if (!scheduled_pause(caller) || request == nullptr)
    return libc::for_caller(caller).clock_nanosleep(clock, flags, request, remaining);
  if (request->tv_sec < 0 || request->tv_nsec < 0 || request->tv_nsec >= static_cast<long>(kNs))
    return EINVAL;
  if ((flags & TIMER_ABSTIME) != 0) {
    const std::uint64_t at = ns_of(*request);
    const std::uint64_t origin = origin_of(clock);
    sched().sleep_until(at > origin ? at - origin : 0, "clock_nanosleep");
  } else {
    sleep_for(ns_of(*request), "clock_nanosleep");
    if (remaining != nullptr) *remaining = {0, 0};
  }
  return 0;
}

int usleep(useconds_t microseconds, const void* caller) {
  if (!scheduled_pause(caller)) return libc::for_caller(caller).usleep(microseconds);
  sleep_for(std::uint64_t{microseconds} * 1000, "usleep");
  return 0;
}

unsigned sleep(unsigned seconds, const void* caller) {
  if (!scheduled_pause(caller)) return libc::for_caller(caller).sleep(seconds);
  sleep_for(std::uint64_t{seconds} * kNs, "sleep");
  return 0;
}

int clock_gettime(clockid_t clock, timespec* now, const void* caller) {
  if (!clock_is_virtual(caller) || now == nullptr)
    return libc::for_caller(caller).clock_gettime(clock, now);
  timespec probe;
  if (libc::for_caller(caller).clock_gettime(clock, &probe) != 0)
    return -1;  // an unknown clock: EINVAL
  *now = timespec_of(origin_of(clock) + sched().now_ns());
  return 0;
}

int gettimeofday(timeval* now, void* zone, const void* caller) {
  if (!clock_is_virtual(caller) || now == nullptr)
    return libc::for_caller(caller).gettimeofday(now, zone);
  const std::uint64_t ns = kRealtimeOrigin + sched().now_ns();
  now->tv_sec = static_cast<time_t>(ns / kNs);
  now->tv_usec = static_cast<suseconds_t>(ns % kNs / 1000);
  return 0;
}

time_t time(time_t* now, const void* caller) {
  if (!clock_is_virtual(caller)) return libc::for_caller(caller).time(now);
  const auto seconds = static_cast<time_t>((kRealtimeOrigin + sched().now_ns()) / kNs);
  if (now != nullptr) *now = seconds;
  return seconds;
}

}  // namespace verbfault::interposer::thread_calls

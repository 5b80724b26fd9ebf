// What the thread calls' files share (harness/threads/): the scheduler
// and the harness's side of it (HarnessWorld: which fds are the verbs',
// how the device advances, how a deadlock ends the run), the virtual
// clocks' origins, and the helpers of timed waits. Private to
// harness/threads/*.cpp; the rest of the harness sees thread_calls.h.
#pragma once

#include "thread_calls.h"

#include "cm_faults.h"
#include "connection_manager.h"

#include "callers.h"
#include "hang_watchdog.h"
#include "interposer.h"
#include "libc.h"
#include "observation.h"
#include "run.h"
#include "scheduler.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace verbfault::interposer::thread_calls {

using scheduler::Wait;
using scheduler::WaitKind;

// The virtual clocks' origins: CLOCK_REALTIME starts at
// 2025-01-01T00:00:00Z, the monotonic clocks at 1000 s (a program may
// take 0 for "never"); the CPU-time clocks at 0.
inline constexpr std::uint64_t kNs = 1'000'000'000;
inline constexpr std::uint64_t kRealtimeOrigin = 1'735'689'600 * kNs;
inline constexpr std::uint64_t kMonotonicOrigin = 1000 * kNs;

inline std::uint64_t origin_of(clockid_t clock) {
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_TAI:
      return kRealtimeOrigin;
    case CLOCK_PROCESS_CPUTIME_ID:
    case CLOCK_THREAD_CPUTIME_ID:
      return 0;
    default:
      return kMonotonicOrigin;
  }
}

inline std::uint64_t ns_of(const timespec& t) {
  if (t.tv_sec < 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * kNs + static_cast<std::uint64_t>(t.tv_nsec);
}

inline timespec timespec_of(std::uint64_t ns) {
  return {static_cast<time_t>(ns / kNs), static_cast<long>(ns % kNs)};
}

// The harness's side of the scheduler: the fds, the device, the end.
// Whether the program opened a real provider's device (real_device_opened):
// the scheduler keeps preemptions short then (World::real_time_device).
extern std::atomic<bool> g_real_device_opened;

class HarnessWorld final : public scheduler::World {
 public:
  bool fd_readable(int fd) override {
    // delayed_completion holds completions back until the application waits
    // on their CQ's channel (completion_events.cpp): such a wait ends.
    return poll_readable(fd) || holds_for_waiter(process_run(), fd);
  }
  Outside wait_external(const std::vector<int>& fds, std::uint64_t timeout_ns,
                        bool interruptible) override {
    std::vector<pollfd> polled;
    for (int fd : fds) polled.push_back({fd, POLLIN, 0});
    int timeout_ms = timeout_ns == scheduler::kNoDeadline
                         ? -1
                         : static_cast<int>(std::min<std::uint64_t>(
                               (timeout_ns + 999'999) / 1'000'000, 1'000'000));
    // The simulated device of a process with peers acts at quiescence
    // (sim/fabric/fabric_wait.h), which raises no fd: look again every ms.
    // Meanwhile no thread of the process can make a verbs call before
    // the world outside acts: to its peers the device waits (a peer
    // waiting for it sees quiescence, not a member outside verbs).
    const bool shares = provider::shares_fabric();
    if (shares) {
      timeout_ms = timeout_ms < 0 ? 1 : std::min(timeout_ms, 1);
      provider::idle_outside(true, fds);
    }
    Outside outside;
    if (interruptible) {
      outside = wait_interruptibly(polled, timeout_ms);
    } else {
      int result;
      while ((result = libc::real().poll(polled.data(), polled.size(), timeout_ms)) < 0 &&
             errno == EINTR) {
      }
      outside = result > 0 ? Outside::readable : Outside::quiet;
    }
    if (shares) provider::idle_outside(false);
    return outside;
  }
  // For a thread whose own wait is read(2)-like: poll(2) fails with EINTR
  // for every handler, SA_RESTART or not (signal(7)), so the fds are
  // looked at every ms and the thread sleeps in read(2) of a timer between
  // looks, which the kernel restarts or fails as it would the real read.
  static Outside wait_interruptibly(std::vector<pollfd>& polled, int timeout_ms) {
    thread_local const int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    for (int waited_ms = 0;; ++waited_ms) {
      if (libc::real().poll(polled.data(), polled.size(), 0) > 0) return Outside::readable;
      if (timeout_ms >= 0 && waited_ms >= timeout_ms) return Outside::quiet;
      if (timer < 0) {
        libc::real().poll(polled.data(), polled.size(), 1);
        continue;
      }
      itimerspec millisecond{};
      millisecond.it_value.tv_nsec = 1'000'000;
      timerfd_settime(timer, 0, &millisecond, nullptr);
      std::uint64_t expirations = 0;
      if (syscall(SYS_read, timer, &expirations, sizeof expirations) < 0 && errno == EINTR)
        return Outside::interrupted;
    }
  }
  std::string fd_name(int fd) override {
    Run& run = process_run();
    std::lock_guard lock(run.mutex);
    const Tracked* owner = owner_of(run, fd);
    if (owner == nullptr) return "fd " + std::to_string(fd);
    return name_of(*owner);
  }
  bool advance_device(const std::vector<int>& fds) override {
    return provider::advance_device_clock(fds);
  }
  bool holder_waits_in_device() override { return provider::waiting_for_another_process(); }
  bool real_time_device() override { return g_real_device_opened.load(std::memory_order_relaxed); }
  [[noreturn]] void deadlock(const std::string& report) override {
    cm_faults::deadlocked(process_run());  // a wait for a CM event: which id's
    std::fprintf(stderr,
                 "verbfault: %s\nverbfault: the program can never make progress; "
                 "ending it with exit status %d\n",
                 report.c_str(), exit_status::kHang);
    process_run().end_run(exit_status::kHang);
  }

  static bool poll_readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return libc::real().poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
  }

  // Which of `fds` are verbs event fds (a channel's, a context's async
  // fd): a wait is modelled only when one is (issue 11; the others are
  // the program's own business). `external`: one is fed from outside the
  // process (a real provider's, or any fd that is not a verbs event fd: a
  // socket, a pipe, an epoll set).
  struct EventFds {
    bool any = false;
    bool external = false;
    char name[128] = {};  // the first one's, for a report
  };
  EventFds event_fds(const int* fds, std::size_t count) {
    EventFds found;
    Run& run = process_run();
    std::lock_guard lock(run.mutex);
    for (std::size_t i = 0; i < count; ++i) {
      // A CM file of the simulated fabric: fed by this process's own calls
      // and clock unless another process shares the fabric; a relayed one
      // from outside. Not a verbs event fd (`any`): a poll(2) on it stays
      // the program's business.
      if (provider::cm_file(fds[i])) {
        found.external |= provider::cm_relayed(fds[i]) || provider::shares_fabric();
        if (found.name[0] == '\0')
          std::snprintf(found.name, sizeof found.name, "%s",
                        cm_faults::name_of_file(run, fds[i]).c_str());
        continue;
      }
      const Tracked* owner = owner_of(run, fds[i]);
      // A simulated device's fd is fed from outside too when another
      // process shares its fabric: its frames raise events.
      found.external |= owner == nullptr || !owner->simulated || provider::shares_fabric();
      if (owner == nullptr || found.any) continue;
      found.any = true;
      const std::string name = name_of(*owner);
      std::snprintf(found.name, sizeof found.name, "%s", name.c_str());
    }
    return found;
  }

 private:
  static std::string name_of(const Tracked& owner) {
    const std::string name =
        std::string(to_string(owner.ref.kind)) + "#" + std::to_string(owner.ref.index);
    return owner.ref.kind == ObjectKind::context ? "the async events of " + name : name;
  }

  // The channel or context whose fd (as the application sees it) is `fd`.
  static const Tracked* owner_of(Run& run, int fd) {
    for (Tracked* tracked : run.registry.all(ObjectKind::channel))
      if (static_cast<const ibv_comp_channel*>(tracked->handle)->fd == fd) return tracked;
    for (Tracked* tracked : run.registry.all(ObjectKind::context))
      if (static_cast<const ibv_context*>(tracked->handle)->async_fd == fd) return tracked;
    return nullptr;
  }
};

// The scheduler of the process's run (Run::scheduler) once start() handed
// it over: the one pointer through which the libc wrappers and the
// watchdog reach it. Null while no run schedules threads.
extern std::atomic<scheduler::Scheduler*> g_scheduler;
// That scheduler. Only behind scheduled(), scheduled_pause(),
// clock_is_virtual() or scheduling(): each is true only once start() ran.
inline scheduler::Scheduler& sched() {
  return *g_scheduler.load(std::memory_order_relaxed);
}
// The scheduler if one was started (running or stopped since), else null.
inline scheduler::Scheduler* started_scheduler() {
  return g_scheduler.load(std::memory_order_relaxed);
}
// Whether a scheduler was started and still schedules.
inline bool scheduling() {
  scheduler::Scheduler* scheduler = g_scheduler.load(std::memory_order_relaxed);
  return scheduler != nullptr && scheduler->running();
}
// The scheduler.h World of this harness.
extern HarnessWorld world;

// The virtual deadline of an absolute timeout on `clock`.
std::uint64_t deadline_of(clockid_t clock, const timespec& abstime);

// An absolute timeout with tv_nsec out of 0..999999999: EINVAL
// (pthread_mutex_timedlock(3p), sem_timedwait(3), pthread_rwlock_timedrdlock(3p)).
bool valid(const timespec& abstime);

// The clocks the clock* variants accept (pthread_mutex_clocklock,
// pthread_cond_clockwait, sem_clockwait, pthread_rwlock_clockrdlock:
// glibc's futex_abstimed_supported_clockid); any other is EINVAL.
bool supported_clock(clockid_t clock);

// Sleeps `ns` on the virtual clock (nanosleep and its kin).
void sleep_for(std::uint64_t ns, const char* call);

// Whether the calling thread's clock is the scheduler's virtual one: a
// thread it manages, calling from the program (the harness's own code
// reads it too, lock held or not: its timings are virtual like the
// program's).
bool clock_is_virtual(const void* caller);

// scheduled() for sched_yield and the sleeps, which ASan does not
// intercept: a call of them from libasan is the runtime's own (callers.h),
// never a scheduling point.
bool scheduled_pause(const void* caller);

}  // namespace verbfault::interposer::thread_calls

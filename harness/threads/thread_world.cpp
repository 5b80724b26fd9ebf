// The scheduler's world as the harness sees it, and the calls that make
// a verbs call a scheduling point (thread_calls.h).
#include "thread_world.h"

namespace verbfault::interposer::thread_calls {

std::atomic<bool> g_real_device_opened{false};

// note_unscheduled_calls(): set by a fork server at load, cleared when it
// serves; the first such call's return address, set once (compare-exchange
// from null).
std::atomic<bool> g_noting_unscheduled{false};
std::atomic<const void*> g_first_unscheduled{nullptr};

std::atomic<scheduler::Scheduler*> g_scheduler{nullptr};

HarnessWorld world;
// initial-exec: see scheduler.cpp (t_self).
__attribute__((tls_model("initial-exec"))) thread_local bool t_last_poll_empty = false;

// The virtual deadline of an absolute timeout on `clock`.
std::uint64_t deadline_of(clockid_t clock, const timespec& abstime) {
  const std::uint64_t at = ns_of(abstime);
  const std::uint64_t origin = origin_of(clock);
  return at > origin ? at - origin : 0;
}

// An absolute timeout with tv_nsec out of 0..999999999: EINVAL
// (pthread_mutex_timedlock(3p), sem_timedwait(3), pthread_rwlock_timedrdlock(3p)).
bool valid(const timespec& abstime) {
  return abstime.tv_nsec >= 0 && abstime.tv_nsec < static_cast<long>(kNs);
}

// The clocks the clock* variants accept (pthread_mutex_clocklock,
// pthread_cond_clockwait, sem_clockwait, pthread_rwlock_clockrdlock:
// glibc's futex_abstimed_supported_clockid); any other is EINVAL.
bool supported_clock(clockid_t clock) {
  return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

void sleep_for(std::uint64_t ns, const char* call) {
  sched().sleep_until(sched().now_ns() + ns, call);
}

// Whether the calling thread's clock is the scheduler's virtual one: a
// thread it manages, calling from the program (the harness's own code
// reads it too, lock held or not: its timings are virtual like the
// program's).
bool clock_is_virtual(const void* caller) {
  // The sanitizer runtime's calls first: before anything that may allocate
  // (callers.h). Not sched().manages_this_thread(): that would create the
  // scheduler, and this is asked from inside malloc too (scheduler.h).
  if (called_from_sanitizer(caller)) return false;
  if (scheduler::Scheduler::manages_this_thread()) return !called_from_rdma_stack(caller);
  // Not the AddressSanitizer runtime's: its own reads (its allocator's)
  // come from the same code as its interceptors' calls for the program,
  // so in that build a program's clock read or lock before its first
  // verbs call goes unnoticed (docs/using.md).
  if (g_noting_unscheduled.load(std::memory_order_relaxed)) [[unlikely]]
    if (!called_from_rdma_stack(caller) && !called_from_address_sanitizer(caller)) {
      const void* none = nullptr;
      g_first_unscheduled.compare_exchange_strong(none, caller, std::memory_order_relaxed);
    }
  return false;
}

void note_unscheduled_calls(bool on) {
  g_noting_unscheduled.store(on, std::memory_order_relaxed);
}

const void* first_unscheduled_call() {
  return g_first_unscheduled.load(std::memory_order_relaxed);
}

bool scheduled(const void* caller) {
  // A thread holding a lock of the harness runs the harness's code: what it
  // calls that reaches these calls (an allocation entering UCX's memory
  // hooks, which lock a pthread_rwlock) is never a scheduling point, which
  // would wait for the lock it holds (docs/architecture.md, "Locking").
  return !record::RunLock::held_by_this_thread() && clock_is_virtual(caller);
}

// scheduled() for sched_yield and the sleeps, which ASan does not
// intercept: a call of them from libasan is the runtime's own (callers.h),
// never a scheduling point.
bool scheduled_pause(const void* caller) {
  return scheduled(caller) && !called_from_address_sanitizer(caller);
}

void real_device_opened() {
  g_real_device_opened.store(true, std::memory_order_relaxed);
}

void start(scheduler::Scheduler& scheduler, const scheduler::Options& options) {
  scheduler.start(options, world);
  g_scheduler.store(&scheduler, std::memory_order_release);
  start_watchdog();
}

void start_for(scheduler::Scheduler& scheduler, const scheduler::Options& options, pthread_t handle,
               pid_t tid) {
  scheduler.start_for(options, world, handle, tid);
  g_scheduler.store(&scheduler, std::memory_order_release);
  start_watchdog();
}

void verbs_point() {
  // Without a scheduler: one load of a global, no thread-local.
  if (!scheduling()) [[likely]]
    return;
  // Only the call right after an empty poll yields: the thread's previous
  // call made no progress; later ones (an arm, a post) are progress.
  const bool yielding = t_last_poll_empty;
  t_last_poll_empty = false;
  sched().point(yielding);
}

void polled(bool empty) {
  if (scheduling()) t_last_poll_empty = empty;
}

}  // namespace verbfault::interposer::thread_calls

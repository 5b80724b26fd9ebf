#include "thread_calls.h"

#include "callers.h"
#include "libc.h"
#include "observation.h"
#include "scheduler.h"
#include "state.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace verbfault::interposer::thread_calls {

namespace {

using scheduler::Wait;
using scheduler::WaitKind;

// The virtual clocks' origins: CLOCK_REALTIME starts at
// 2025-01-01T00:00:00Z, the monotonic clocks at 1000 s (a program may
// take 0 for "never"); the CPU-time clocks at 0.
constexpr std::uint64_t kNs = 1'000'000'000;
constexpr std::uint64_t kRealtimeOrigin = 1'735'689'600 * kNs;
constexpr std::uint64_t kMonotonicOrigin = 1000 * kNs;

std::uint64_t origin_of(clockid_t clock) {
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

std::uint64_t ns_of(const timespec& t) {
  if (t.tv_sec < 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * kNs + static_cast<std::uint64_t>(t.tv_nsec);
}

timespec timespec_of(std::uint64_t ns) {
  return {static_cast<time_t>(ns / kNs), static_cast<long>(ns % kNs)};
}

// The harness's side of the scheduler: the fds, the device, the end.
class HarnessWorld final : public scheduler::World {
 public:
  bool fd_readable(int fd) override {
    if (poll_readable(fd)) return true;
    // delayed_completion holds completions back until the application waits
    // on their CQ's channel (completion_events.cpp): such a wait ends.
    State& state = State::get();
    std::lock_guard lock(state.mutex);
    if (!state.engine.holds_completions()) return false;
    for (Tracked* tracked : state.registry.all(ObjectKind::cq)) {
      const auto* cq = static_cast<const ibv_cq*>(tracked->handle);
      if (cq->channel != nullptr && cq->channel->fd == fd && !tracked->faults->held.empty())
        return true;
    }
    return false;
  }
  bool fd_external(int fd) override {
    State& state = State::get();
    std::lock_guard lock(state.mutex);
    const Tracked* owner = owner_of(state, fd);
    return owner != nullptr && !owner->simulated;
  }
  void wait_external(const std::vector<int>& fds) override {
    std::vector<pollfd> polled;
    for (int fd : fds) polled.push_back({fd, POLLIN, 0});
    while (::poll(polled.data(), polled.size(), -1) < 0 && errno == EINTR) {
    }
  }
  std::string fd_name(int fd) override {
    State& state = State::get();
    std::lock_guard lock(state.mutex);
    const Tracked* owner = owner_of(state, fd);
    if (owner == nullptr) return "fd " + std::to_string(fd);
    const std::string name =
        std::string(to_string(owner->ref.kind)) + "#" + std::to_string(owner->ref.index);
    return owner->ref.kind == ObjectKind::context ? "the async events of " + name : name;
  }
  bool advance_device() override { return provider::advance_device_clock(); }
  [[noreturn]] void deadlock(const std::string& report) override {
    std::fprintf(stderr,
                 "verbfault: %s\nverbfault: the program can never make progress; "
                 "ending it with exit status 122\n",
                 report.c_str());
    State::get().end_run(122);
  }

  static bool poll_readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
  }

 private:
  // The channel or context whose fd (as the application sees it) is `fd`.
  static const Tracked* owner_of(State& state, int fd) {
    for (Tracked* tracked : state.registry.all(ObjectKind::channel))
      if (static_cast<const ibv_comp_channel*>(tracked->handle)->fd == fd) return tracked;
    for (Tracked* tracked : state.registry.all(ObjectKind::context))
      if (static_cast<const ibv_context*>(tracked->handle)->async_fd == fd) return tracked;
    return nullptr;
  }
};

scheduler::Scheduler& sched() {
  return scheduler::scheduler();
}

HarnessWorld world;
thread_local bool t_last_poll_empty = false;

// A thread released by the watchdog: the trace and stderr say from where
// the run is no longer a function of the seed.
void note_escape(const scheduler::Escape& escape) {
  State& state = State::get();
  std::uint64_t position = 0;
  {
    std::unique_lock lock(state.mutex);
    position = state.trace.records();
    state.record(record::CallRecord({record::kNoSlot, {ObjectKind::thread, escape.thread}})
                     .add("event", "escaped")
                     .add("activity", escape.what));
  }
  std::fprintf(stderr,
               "verbfault: not deterministic from trace record %llu: thread %u is %s outside "
               "the harness\n",
               static_cast<unsigned long long>(position), escape.thread, escape.what.c_str());
}

// The watchdog: a thread outside the schedule that looks, a few times per
// escape time, whether the running thread has stopped reaching scheduling
// points while others wait for their turn (scheduler.h, watch()).
void* watchdog(void*) {
  const std::uint64_t escape_ns = sched().options().escape_ns;
  const std::uint64_t tick_ns = std::max<std::uint64_t>(escape_ns / 8, 1'000'000);
  const timespec tick = timespec_of(tick_ns);
  for (;;) {
    libc::real().nanosleep(&tick, nullptr);
    timespec wall{};
    libc::real().clock_gettime(CLOCK_MONOTONIC, &wall);
    if (const std::optional<scheduler::Escape> escape = sched().watch(ns_of(wall)))
      note_escape(*escape);
  }
  return nullptr;
}

void start_watchdog() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  // Without a watchdog the run is still deterministic; it only cannot
  // release a thread stuck outside the harness.
  if (libc::real().create(&thread, &attr, watchdog, nullptr) != 0)
    std::fprintf(stderr,
                 "verbfault: cannot start the scheduler's watchdog thread; a thread blocked "
                 "outside the harness will hold the others back\n");
  pthread_attr_destroy(&attr);
}

// The thread a start routine runs on: it takes its turn first.
struct Start {
  scheduler::ThreadId id;
  void* (*routine)(void*);
  void* arg;
};

void* start_scheduled(void* raw) {
  const Start start = *static_cast<Start*>(raw);
  delete static_cast<Start*>(raw);
  sched().enter_thread(start.id);
  void* result = start.routine(start.arg);
  sched().exit_thread();
  return result;
}

// Takes `mutex` for a scheduled thread: a held mutex blocks the thread in
// the scheduler, never in the kernel.
int lock_scheduled(pthread_mutex_t* mutex, const char* call) {
  for (;;) {
    const int result = libc::real().mutex_trylock(mutex);
    if (result != EBUSY) return result;
    // An error-checking mutex the thread holds: EDEADLK, as
    // pthread_mutex_lock(3) says; a normal one would deadlock, and the
    // scheduler reports it.
    if (mutex->__data.__owner == gettid() && mutex->__data.__kind == PTHREAD_MUTEX_ERRORCHECK_NP)
      return EDEADLK;
    Wait wait;
    wait.kind = WaitKind::mutex;
    wait.object = mutex;
    wait.call = call;
    sched().block(wait);
  }
}

void unlocked(pthread_mutex_t* mutex) {
  sched().wake_all(WaitKind::mutex, mutex);
}

// The virtual deadline of a condition's absolute timeout: its clock is
// CLOCK_REALTIME unless pthread_condattr_setclock chose CLOCK_MONOTONIC
// (glibc keeps the choice in bit 1 of __wrefs).
std::uint64_t cond_deadline(const pthread_cond_t* cond, const timespec& abstime) {
  const clockid_t clock = (cond->__data.__wrefs & 2) != 0 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
  const std::uint64_t at = ns_of(abstime);
  const std::uint64_t origin = origin_of(clock);
  return at > origin ? at - origin : 0;
}

int wait_on_cond(pthread_cond_t* cond, pthread_mutex_t* mutex, std::uint64_t deadline,
                 const char* call) {
  int result = libc::real().mutex_unlock(mutex);
  if (result != 0) return result;
  unlocked(mutex);
  Wait wait;
  wait.kind = WaitKind::cond;
  wait.object = cond;
  wait.deadline_ns = deadline;
  wait.call = call;
  const bool woken = sched().block(wait);
  result = lock_scheduled(mutex, call);
  if (result != 0) return result;
  return woken ? 0 : ETIMEDOUT;
}

void sleep_for(std::uint64_t ns, const char* call) {
  sched().sleep_until(sched().now_ns() + ns, call);
}

}  // namespace

bool scheduled(const void* caller) {
  return sched().manages_this_thread() && !called_from_rdma_stack(caller);
}

void start(const scheduler::Options& options) {
  sched().start(options, world);
  start_watchdog();
  // A forked child has one thread, the forking one: its own schedule (and
  // its own watchdog).
  pthread_atfork(nullptr, nullptr, [] {
    sched().after_fork_in_child();
    if (sched().running()) start_watchdog();
  });
}

void verbs_point() {
  // Without a scheduler: one load of a global, no thread-local.
  if (!sched().running()) [[likely]]
    return;
  // Only the call right after an empty poll yields: the thread's previous
  // call made no progress; later ones (an arm, a post) are progress.
  const bool yielding = t_last_poll_empty;
  t_last_poll_empty = false;
  sched().point(yielding);
}

void polled(bool empty) {
  if (sched().running()) t_last_poll_empty = empty;
}

bool wait_readable(int fd, const char* call) {
  if (!sched().manages_this_thread()) return true;
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK) != 0) return true;  // the call itself says EAGAIN
  if (HarnessWorld::poll_readable(fd)) return true;
  Wait wait;
  wait.kind = WaitKind::fd;
  wait.fd = fd;
  wait.call = call;
  // Named here, where the registry can be asked: a report may be made
  // under the interposer's lock.
  const std::string name = world.fd_name(fd);
  std::snprintf(wait.fd_name, sizeof wait.fd_name, "%s", name.c_str());
  sched().block(wait);
  return HarnessWorld::poll_readable(fd);
}

int mutex_lock(pthread_mutex_t* mutex, const void* caller) {
  if (!scheduled(caller)) return libc::real().mutex_lock(mutex);
  sched().point();
  return lock_scheduled(mutex, "pthread_mutex_lock");
}

int mutex_trylock(pthread_mutex_t* mutex, const void* caller) {
  if (!scheduled(caller)) return libc::real().mutex_trylock(mutex);
  sched().point();
  const int result = libc::real().mutex_trylock(mutex);
  if (result == EBUSY) sched().point(/*yielding=*/true);  // a spin on trylock lets others run
  return result;
}

int mutex_unlock(pthread_mutex_t* mutex, const void* caller) {
  const int result = libc::real().mutex_unlock(mutex);
  if (result != 0 || !scheduled(caller)) return result;
  unlocked(mutex);
  sched().point();
  return 0;
}

int cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex, const void* caller) {
  if (!scheduled(caller)) return libc::real().cond_wait(cond, mutex);
  sched().point();
  return wait_on_cond(cond, mutex, scheduler::kNoDeadline, "pthread_cond_wait");
}

int cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* abstime,
                   const void* caller) {
  if (!scheduled(caller) || abstime == nullptr)
    return libc::real().cond_timedwait(cond, mutex, abstime);
  if (abstime->tv_nsec < 0 || abstime->tv_nsec >= static_cast<long>(kNs)) return EINVAL;
  sched().point();
  return wait_on_cond(cond, mutex, cond_deadline(cond, *abstime), "pthread_cond_timedwait");
}

int cond_signal(pthread_cond_t* cond, const void* caller) {
  const int result = libc::real().cond_signal(cond);  // a waiter outside the schedule
  if (!scheduled(caller)) return result;
  sched().wake_one(WaitKind::cond, cond);
  sched().point();
  return result;
}

int cond_broadcast(pthread_cond_t* cond, const void* caller) {
  const int result = libc::real().cond_broadcast(cond);
  if (!scheduled(caller)) return result;
  sched().wake_all(WaitKind::cond, cond);
  sched().point();
  return result;
}

int create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg,
           const void* caller) {
  if (!scheduled(caller)) return libc::real().create(thread, attr, routine, arg);
  const scheduler::ThreadId id = sched().reserve_thread();
  auto* start = new Start{id, routine, arg};
  const int result = libc::real().create(thread, attr, start_scheduled, start);
  if (result != 0) {
    delete start;
    sched().creation_failed(id);
    return result;
  }
  sched().created(id, *thread);
  sched().point();
  return 0;
}

int join(pthread_t thread, void** result, const void* caller) {
  if (scheduled(caller)) {
    if (const std::optional<scheduler::ThreadId> id = sched().thread_of(thread)) {
      sched().point();
      while (!sched().finished(*id)) {
        Wait wait;
        wait.kind = WaitKind::join;
        wait.thread = *id;
        wait.call = "pthread_join";
        sched().block(wait);
      }
    }
  }
  // The thread has left the schedule; the real join waits for it to be gone.
  return libc::real().join(thread, result);
}

void exit(void* result) {
  sched().exit_thread();
  libc::real().exit(result);
}

int sched_yield(const void* caller) {
  if (!scheduled(caller)) return libc::real().sched_yield();
  sched().point(/*yielding=*/true);
  return 0;
}

int nanosleep(const timespec* request, timespec* remaining, const void* caller) {
  if (!scheduled(caller) || request == nullptr) return libc::real().nanosleep(request, remaining);
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
  if (!scheduled(caller) || request == nullptr)
    return libc::real().clock_nanosleep(clock, flags, request, remaining);
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
  if (!scheduled(caller)) return libc::real().usleep(microseconds);
  sleep_for(std::uint64_t{microseconds} * 1000, "usleep");
  return 0;
}

unsigned sleep(unsigned seconds, const void* caller) {
  if (!scheduled(caller)) return libc::real().sleep(seconds);
  sleep_for(std::uint64_t{seconds} * kNs, "sleep");
  return 0;
}

int clock_gettime(clockid_t clock, timespec* now, const void* caller) {
  if (!scheduled(caller) || now == nullptr) return libc::real().clock_gettime(clock, now);
  timespec probe;
  if (libc::real().clock_gettime(clock, &probe) != 0) return -1;  // an unknown clock: EINVAL
  *now = timespec_of(origin_of(clock) + sched().now_ns());
  return 0;
}

int gettimeofday(timeval* now, void* zone, const void* caller) {
  if (!scheduled(caller) || now == nullptr) return libc::real().gettimeofday(now, zone);
  const std::uint64_t ns = kRealtimeOrigin + sched().now_ns();
  now->tv_sec = static_cast<time_t>(ns / kNs);
  now->tv_usec = static_cast<suseconds_t>(ns % kNs / 1000);
  return 0;
}

time_t time(time_t* now, const void* caller) {
  if (!scheduled(caller)) return libc::real().time(now);
  const auto seconds = static_cast<time_t>((kRealtimeOrigin + sched().now_ns()) / kNs);
  if (now != nullptr) *now = seconds;
  return seconds;
}

}  // namespace verbfault::interposer::thread_calls

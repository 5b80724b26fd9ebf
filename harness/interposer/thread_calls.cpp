#include "thread_calls.h"

#include "cm_faults.h"
#include "connection_manager.h"

#include "callers.h"
#include "cm_files.h"
#include "hang_watchdog.h"
#include "interposer.h"
#include "libc.h"
#include "observation.h"
#include "scheduler.h"
#include "run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <span>
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
// Whether the program opened a real provider's device (real_device_opened):
// the scheduler keeps preemptions short then (World::real_time_device).
std::atomic<bool> g_real_device_opened{false};

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

scheduler::Scheduler& sched() {
  return scheduler::scheduler();
}

HarnessWorld world;
// initial-exec: see scheduler.cpp (t_self).
__attribute__((tls_model("initial-exec"))) thread_local bool t_last_poll_empty = false;

// A thread released by the watchdog: the trace and stderr say from where
// the run is no longer a function of the seed.
void note_escape(const scheduler::Escape& escape) {
  Run& run = process_run();
  std::uint64_t position = 0;
  {
    std::unique_lock lock(run.mutex);
    position = run.trace.records();
    run.record(record::CallRecord({record::kNoSlot, {ObjectKind::thread, escape.thread}})
                     .add("event", "escaped")
                     .add("activity", escape.what));
  }
  std::fprintf(stderr,
               "verbfault: not deterministic from trace record %llu: thread %u is %s outside "
               "the harness\n",
               static_cast<unsigned long long>(position), escape.thread, escape.what.c_str());
}

// Whether this process has its watchdog thread (a forked child starts
// its own): it is one of the harness's threads, not the program's.
std::atomic<bool> g_watchdog_running{false};

// The watchdog: a thread outside the schedule that looks, a few times per
// escape time, whether the running thread has stopped reaching scheduling
// points while others wait for their turn (scheduler.h, watch()), and, a
// few times per hang time, whether the program is hung (hang_watchdog.h).
void* watchdog(void*) {
  // The harness's threads are named "vf-..." (hang_watchdog.cpp).
  pthread_setname_np(pthread_self(), "vf-watchdog");
  const bool scheduling = sched().running();
  const std::uint64_t escape_tick =
      std::max<std::uint64_t>(sched().options().escape_ns / 8, 1'000'000);
  const std::uint64_t hang_tick = hang::look_interval_ns();
  std::uint64_t tick_ns = scheduling ? escape_tick : hang_tick;
  if (scheduling && hang::enabled()) tick_ns = std::min(escape_tick, hang_tick);
  const timespec tick = timespec_of(tick_ns);
  std::uint64_t next_hang_look = 0;
  for (;;) {
    libc::real().nanosleep(&tick, nullptr);
    timespec wall{};
    libc::real().clock_gettime(CLOCK_MONOTONIC, &wall);
    const std::uint64_t now = ns_of(wall);
    if (scheduling)
      if (const std::optional<scheduler::Escape> escape = sched().watch(now)) note_escape(*escape);
    if (hang::enabled() && now >= next_hang_look) {
      next_hang_look = now + hang_tick;
      hang::look(now);
    }
  }
  return nullptr;
}

}  // namespace

void start_watchdog() {
  if (g_watchdog_running.exchange(true)) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  // Without a watchdog the run is still deterministic; it only cannot
  // release a thread stuck outside the harness, or end a hung run.
  if (libc::real().create(&thread, &attr, watchdog, nullptr) != 0) {
    g_watchdog_running = false;
    std::fprintf(stderr,
                 "verbfault: cannot start the watchdog thread; a thread blocked outside the "
                 "harness will hold the others back, and a hung run is not ended\n");
  }
  pthread_attr_destroy(&attr);
}

int harness_threads() {
  return g_watchdog_running.load(std::memory_order_relaxed) ? 1 : 0;
}

namespace {

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

// A scheduled thread trying a lock-like object, and blocking on it while
// it cannot take it (Scheduler::begin_lock_wait).
struct LockWait {
  LockWait() { sched().begin_lock_wait(); }
  ~LockWait() { sched().end_lock_wait(); }
  LockWait(const LockWait&) = delete;
  LockWait& operator=(const LockWait&) = delete;
};

// Takes `mutex` for a scheduled thread: a held mutex blocks the thread in
// the scheduler, never in the kernel. With a deadline on the virtual clock
// (pthread_mutex_timedlock): ETIMEDOUT once it passed.
int lock_scheduled(pthread_mutex_t* mutex, const char* call,
                   std::uint64_t deadline = scheduler::kNoDeadline) {
  const LockWait intent;
  for (;;) {
    const std::uint64_t releases = sched().outside_releases();
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
    wait.deadline_ns = deadline;
    wait.call = call;
    wait.outside_releases = releases;
    if (!sched().block(wait)) return ETIMEDOUT;
  }
}

void unlocked(pthread_mutex_t* mutex) {
  sched().wake_all(WaitKind::mutex, mutex);
}

// The virtual deadline of an absolute timeout on `clock`.
std::uint64_t deadline_of(clockid_t clock, const timespec& abstime) {
  const std::uint64_t at = ns_of(abstime);
  const std::uint64_t origin = origin_of(clock);
  return at > origin ? at - origin : 0;
}

// The virtual deadline of a condition's absolute timeout: its clock is
// CLOCK_REALTIME unless pthread_condattr_setclock chose CLOCK_MONOTONIC
// (glibc keeps the choice in bit 1 of __wrefs).
std::uint64_t cond_deadline(const pthread_cond_t* cond, const timespec& abstime) {
  return deadline_of((cond->__data.__wrefs & 2) != 0 ? CLOCK_MONOTONIC : CLOCK_REALTIME, abstime);
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

// pthread_mutex_timedlock and pthread_mutex_clocklock: "The validity of
// the abstime parameter need not be checked if the mutex can be locked
// immediately." (pthread_mutex_timedlock(3p)); EINVAL when it is checked
// and wrong, ETIMEDOUT at the deadline on the virtual clock.
int mutex_lock_until(pthread_mutex_t* mutex, clockid_t clock, const timespec& abstime,
                     const char* call) {
  sched().point();
  const int result = libc::real().mutex_trylock(mutex);
  if (result != EBUSY) return result;
  if (!valid(abstime)) return EINVAL;
  return lock_scheduled(mutex, call, deadline_of(clock, abstime));
}

int wait_on_cond(pthread_cond_t* cond, pthread_mutex_t* mutex, std::uint64_t deadline,
                 const char* call) {
  const LockWait intent;
  const std::uint64_t releases = sched().outside_releases();
  int result = libc::real().mutex_unlock(mutex);
  if (result != 0) return result;
  unlocked(mutex);
  Wait wait;
  wait.kind = WaitKind::cond;
  wait.object = cond;
  wait.deadline_ns = deadline;
  wait.call = call;
  wait.outside_releases = releases;
  const bool woken = sched().block(wait);
  result = lock_scheduled(mutex, call);
  if (result != 0) return result;
  return woken ? 0 : ETIMEDOUT;
}

void sleep_for(std::uint64_t ns, const char* call) {
  sched().sleep_until(sched().now_ns() + ns, call);
}

// ---- rwlocks and semaphores -------------------------------------------------

// A rwlock shared between processes (pthread_rwlockattr_setpshared): the
// other process is outside the schedule, so its calls are glibc's.
bool shared_between_processes(const pthread_rwlock_t* rwlock) {
  return rwlock->__data.__shared != 0;
}

// glibc's sem_t on 64-bit targets is struct new_sem { uint64_t data; int
// private; int pad; }: `private` is 0 for sem_init(sem, 0, n), FUTEX_SHARED
// for a semaphore shared between processes (sem_init with pshared != 0,
// sem_open): those stay glibc's.
bool shared_between_processes(const sem_t* sem) {
  int futex_private = 0;
  std::memcpy(&futex_private, reinterpret_cast<const char*>(sem) + sizeof(std::uint64_t),
              sizeof futex_private);
  return futex_private != 0;
}

// Takes `rwlock` with `try_lock` (the real tryrdlock or trywrlock) for a
// scheduled thread: a lock held against it blocks the thread in the
// scheduler; pthread_rwlock_unlock wakes every waiter, and the first the
// scheduler runs gets it (pthread_rwlock_unlock(3p): which one is
// unspecified). Waiting writers are not in glibc's lock, so readers may
// overtake them: glibc's default PTHREAD_RWLOCK_PREFER_READER_NP lets them
// too.
int rwlock_scheduled(pthread_rwlock_t* rwlock, int (*try_lock)(pthread_rwlock_t*),
                     std::uint64_t deadline, const char* call) {
  const LockWait intent;
  for (;;) {
    const std::uint64_t releases = sched().outside_releases();
    const int result = try_lock(rwlock);
    if (result != EBUSY) return result;
    // Held for writing by the calling thread: EDEADLK, as glibc's rdlock
    // and wrlock say (pthread_rwlock_wrlock(3p) allows it).
    if (rwlock->__data.__cur_writer == gettid()) return EDEADLK;
    Wait wait;
    wait.kind = WaitKind::rwlock;
    wait.object = rwlock;
    wait.deadline_ns = deadline;
    wait.call = call;
    wait.outside_releases = releases;
    if (!sched().block(wait)) return ETIMEDOUT;
  }
}

// A timed rdlock or wrlock. glibc checks the timeout first, whether or not
// the lock is free (nptl/pthread_rwlock_common.c; pthread_rwlock_timedrdlock(3p)
// allows either): so does the harness, so that a program behaves the same
// under it.
int rwlock_until(pthread_rwlock_t* rwlock, int (*try_lock)(pthread_rwlock_t*), clockid_t clock,
                 const timespec& abstime, const char* call) {
  if (!supported_clock(clock) || !valid(abstime)) return EINVAL;
  sched().point();
  return rwlock_scheduled(rwlock, try_lock, deadline_of(clock, abstime), call);
}

// sem_wait for a scheduled thread: a semaphore at zero blocks the thread
// in the scheduler until a sem_post wakes it (sem_wait(3)), or the
// deadline passes (-1, ETIMEDOUT).
int sem_wait_scheduled(sem_t* sem, std::uint64_t deadline, const char* call) {
  const LockWait intent;
  for (;;) {
    const std::uint64_t releases = sched().outside_releases();
    if (libc::real().sem_trywait(sem) == 0) return 0;
    if (errno != EAGAIN) return -1;
    Wait wait;
    wait.kind = WaitKind::semaphore;
    wait.object = sem;
    wait.deadline_ns = deadline;
    wait.call = call;
    wait.outside_releases = releases;
    if (!sched().block(wait)) {
      errno = ETIMEDOUT;
      return -1;
    }
  }
}

// sem_timedwait and sem_clockwait. sem_timedwait(3) says the timeout is
// not checked when the semaphore can be taken at once, but glibc checks it
// first (nptl/sem_timedwait.c, as POSIX allows): the harness does as the
// program's C library does.
int sem_until(sem_t* sem, clockid_t clock, const timespec& abstime, const char* call) {
  if (!supported_clock(clock) || !valid(abstime)) {
    errno = EINVAL;
    return -1;
  }
  sched().point();
  return sem_wait_scheduled(sem, deadline_of(clock, abstime), call);
}

// ---- waits on fds: poll(2), select(2), epoll_wait(2), read(2) ---------------
//
// Modelled only when the fds include a verbs event fd (a channel's, a
// context's async fd) and the call waits only to read: then the thread
// waits in the scheduler, on the virtual clock, and other threads run
// meanwhile. Any other such call (sockets, pipes, writes) passes through
// to the C library: the watchdog releases a thread blocked in it.

// Read interest only: the scheduler wakes a waiter when an fd is readable
// (or has an error or a hang-up, which poll(2) reports whatever was asked).
constexpr short kReadEvents = POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND | POLLRDHUP;
constexpr std::uint32_t kEpollReadEvents = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND |
                                           EPOLLRDHUP | EPOLLERR | EPOLLHUP | EPOLLET |
                                           EPOLLONESHOT | EPOLLWAKEUP | EPOLLEXCLUSIVE;

// The fds a call waits on, as far as a Wait can hold them (kMaxWaitFds; one
// more means "too many").
struct FdList {
  int fds[scheduler::kMaxWaitFds + 1];
  std::size_t count = 0;
  bool read_only = true;
  void add(int fd) {
    for (std::size_t i = 0; i < count; ++i)
      if (fds[i] == fd) return;
    if (count <= scheduler::kMaxWaitFds) fds[count++] = fd;
  }
  bool fits() const { return count <= scheduler::kMaxWaitFds; }
};

// A relative timeout in ns (kNoDeadline: none) as a virtual deadline.
std::uint64_t deadline_after(std::uint64_t timeout_ns) {
  return timeout_ns == scheduler::kNoDeadline ? timeout_ns : sched().now_ns() + timeout_ns;
}

std::uint64_t ns_of_ms(int timeout_ms) {
  return timeout_ms < 0 ? scheduler::kNoDeadline : std::uint64_t(timeout_ms) * 1'000'000;
}

std::uint64_t ns_of_timeout(const timespec* timeout) {
  return timeout == nullptr ? scheduler::kNoDeadline : ns_of(*timeout);
}

// Whether a wait on `watched` is modelled (it only reads, at most
// kMaxWaitFds fds); fills `wait` then with `waited` (the fds whose
// readability ends it), whether one is fed from outside, and the name of
// the first verbs event fd. A wait on none of them (a socket, a pipe, an
// eventfd: an event loop's or a library's progress thread, UCX's async
// thread) is modelled too, as fed from outside: blocked in the kernel it
// would hold the baton until the watchdog released it, and every other
// thread would wait the escape time; in the scheduler the others run, and
// the scheduler waits for the fds in real time only when nobody can.
bool model(Wait& wait, const FdList& watched, const FdList& waited, const char* call) {
  if (!watched.read_only || !watched.fits() || !waited.fits() || watched.count == 0) return false;
  HarnessWorld::EventFds found = world.event_fds(watched.fds, watched.count);
  if (!found.any) found.external = true;
  wait.outside_only = !found.any;
  wait.kind = WaitKind::fd;
  for (std::size_t i = 0; i < waited.count; ++i) wait.add_fd(waited.fds[i]);
  wait.external = found.external;
  wait.call = call;
  std::snprintf(wait.fd_name, sizeof wait.fd_name, "%s", found.name);
  return true;
}

// A wait on fds by a scheduled thread. `check` is the real call with a zero
// timeout (it fills in the caller's results); `pass` the real call as the
// program made it. Nothing ready and a modelled wait: the thread waits in
// the scheduler until one of the fds is readable or the virtual deadline
// passes, then `check` says what came (0: the timeout).
template <class Check, class Pass>
int wait_on_fds(const FdList& watched, const FdList& waited, std::uint64_t timeout_ns,
                const char* call, const Check& check, const Pass& pass) {
  const int ready = check();
  if (ready != 0) return ready;  // ready, or an error (EBADF, EINTR, EINVAL)
  Wait wait;
  if (!model(wait, watched, waited, call)) return timeout_ns == 0 ? 0 : pass();
  if (timeout_ns == 0) {
    // A loop that polls with a zero timeout lets the others run.
    sched().point(/*yielding=*/true);
    return 0;
  }
  wait.deadline_ns = deadline_after(timeout_ns);
  for (;;) {
    const bool woken = sched().block(wait);
    const int result = check();
    if (result != 0 || !woken) return result;
    // Woken with nothing for the call: completions the harness holds back
    // on a channel's CQs (delayed_completion) end a wait, as before
    // ibv_get_cq_event, and become visible now. The yield moves the
    // virtual clock: a wait that keeps waking for nothing still ends at
    // its deadline.
    for (std::size_t i = 0; i < wait.fd_count; ++i) release_held_for_waiter(process_run(), wait.fds[i]);
    sched().point(/*yielding=*/true);
  }
}

// The fds of a poll(2) set (negative ones are ignored, as poll does).
FdList fds_of(const pollfd* fds, nfds_t n) {
  FdList list;
  for (nfds_t i = 0; i < n; ++i) {
    if (fds[i].fd < 0) continue;
    list.add(fds[i].fd);
    list.read_only &= (fds[i].events & ~kReadEvents) == 0;
  }
  return list;
}

// The fds of a select(2): those of `readfds`; any in `writefds` or
// `exceptfds` makes it a wait the scheduler does not model.
FdList fds_of(int nfds, const fd_set* readfds, const fd_set* writefds, const fd_set* exceptfds) {
  FdList list;
  if (nfds < 0 || nfds > FD_SETSIZE) {
    list.read_only = false;
    return list;
  }
  for (int fd = 0; fd < nfds; ++fd) {
    if (readfds != nullptr && FD_ISSET(fd, readfds)) list.add(fd);
    if ((writefds != nullptr && FD_ISSET(fd, writefds)) ||
        (exceptfds != nullptr && FD_ISSET(fd, exceptfds)))
      list.read_only = false;
  }
  return list;
}

// The members of the epoll set `epfd` (`watched`), from
// /proc/self/fdinfo/<epfd>, which has a "tfd: <fd> events: <mask>" line
// per member (proc(5)); the wait is on `epfd` itself, readable when a
// member is ready (epoll(7)), and on the members that are level-triggered
// (a channel with held completions ends the wait). Too many members, or an
// unreadable fdinfo: not modelled.
void epoll_members(int epfd, FdList& watched, FdList& waited) {
  waited.add(epfd);
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  char text[16384];  // a "tfd:" line per member, about 80 bytes each
  ssize_t size = -1;
  if (fd >= 0) {
    size = libc::real().read(fd, text, sizeof text - 1);
    ::close(fd);
  }
  if (size <= 0 || size == static_cast<ssize_t>(sizeof text - 1)) {
    watched.read_only = false;
    return;
  }
  text[size] = '\0';
  for (const char* line = std::strstr(text, "tfd:"); line != nullptr;
       line = std::strstr(line + 4, "tfd:")) {
    int member = -1;
    unsigned events = 0;
    if (std::sscanf(line, "tfd: %d events: %x", &member, &events) != 2) continue;
    watched.add(member);
    watched.read_only &= (events & ~kEpollReadEvents) == 0;
    if ((events & (EPOLLET | EPOLLONESHOT)) == 0) waited.add(member);
  }
}

// epoll_wait, epoll_pwait and epoll_pwait2 of a scheduled thread; `pass`
// is the real call as the program made it. The set's members are read from
// /proc only when nothing is ready (the check comes first).
template <class Pass>
int epoll_scheduled(int epfd, epoll_event* events, int max_events, std::uint64_t timeout_ns,
                    const sigset_t* sigmask, const char* call, const Pass& pass) {
  auto check = [&] { return libc::real().epoll_pwait(epfd, events, max_events, 0, sigmask); };
  if (const int ready = check(); ready != 0) return ready;
  FdList watched, waited;
  epoll_members(epfd, watched, waited);
  if (!waited.fits()) {
    waited = FdList{};
    waited.add(epfd);
  }
  return wait_on_fds(watched, waited, timeout_ns, call, check, pass);
}

}  // namespace

namespace {

// Whether the calling thread's clock is the scheduler's virtual one: a
// thread it manages, calling from the program (the harness's own code
// reads it too, lock held or not: its timings are virtual like the
// program's).
bool clock_is_virtual(const void* caller) {
  // The sanitizer runtime's calls first: before anything that may allocate
  // (callers.h). Not sched().manages_this_thread(): that would create the
  // scheduler, and this is asked from inside malloc too (scheduler.h).
  if (called_from_sanitizer(caller)) return false;
  return scheduler::Scheduler::manages_this_thread() && !called_from_rdma_stack(caller);
}

}  // namespace

bool scheduled(const void* caller) {
  // A thread holding a lock of the harness runs the harness's code: what it
  // calls that reaches these calls (an allocation entering UCX's memory
  // hooks, which lock a pthread_rwlock) is never a scheduling point, which
  // would wait for the lock it holds (docs/architecture.md, "Locking").
  return !record::RunLock::held_by_this_thread() && clock_is_virtual(caller);
}

namespace {

// scheduled() for sched_yield and the sleeps, which ASan does not
// intercept: a call of them from libasan is the runtime's own (callers.h),
// never a scheduling point.
bool scheduled_pause(const void* caller) {
  return scheduled(caller) && !called_from_address_sanitizer(caller);
}

}  // namespace

void real_device_opened() {
  g_real_device_opened.store(true, std::memory_order_relaxed);
}

void start(const scheduler::Options& options) {
  sched().start(options, world);
  start_watchdog();
}

void after_fork_in_child() {
  // A forked child has one thread, the forking one: its own schedule (and
  // its own watchdog).
  g_watchdog_running = false;
  sched().after_fork_in_child();
  if (sched().running() || hang::enabled()) start_watchdog();
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

Readable wait_readable(int fd, const char* call) {
  if (!scheduler::Scheduler::manages_this_thread()) return Readable::ready;
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK) != 0) return Readable::ready;  // the call says EAGAIN
  if (HarnessWorld::poll_readable(fd)) return Readable::ready;
  Wait wait;
  wait.kind = WaitKind::fd;
  wait.add_fd(fd);
  wait.call = call;
  wait.interruptible = true;
  // Named here, where the registry can be asked: a report may be made
  // under the interposer's lock.
  const HarnessWorld::EventFds found = world.event_fds(&fd, 1);
  wait.external = found.external;
  std::snprintf(wait.fd_name, sizeof wait.fd_name, "%s", found.name);
  sched().block(wait);
  if (scheduler::Scheduler::interrupted()) return Readable::interrupted;
  return HarnessWorld::poll_readable(fd) ? Readable::ready : Readable::held;
}

Readable wait_readable_outside(int fd) {
  if (scheduler::Scheduler::manages_this_thread() && sched().running()) return Readable::ready;
  std::vector<pollfd> polled{{fd, POLLIN, 0}};
  return HarnessWorld::wait_interruptibly(polled, -1) == scheduler::World::Outside::interrupted
             ? Readable::interrupted
             : Readable::ready;
}

bool wait_readable_for(int fd, std::uint64_t timeout_ns, const char* call, const char* what) {
  if (HarnessWorld::poll_readable(fd)) return true;
  if (scheduler::Scheduler::manages_this_thread() && sched().running()) {
    Wait wait;
    wait.kind = WaitKind::fd;
    wait.add_fd(fd);
    wait.call = call;
    // A real provider's fd is fed from outside; the simulated device's by
    // its own clock, unless it shares a fabric with other processes.
    wait.external = world.event_fds(&fd, 1).external;
    wait.deadline_ns = sched().now_ns() + timeout_ns;
    std::snprintf(wait.fd_name, sizeof wait.fd_name, "%s", what);
    sched().block(wait);
    return HarnessWorld::poll_readable(fd);
  }
  pollfd readable{fd, POLLIN, 0};
  const int timeout_ms = static_cast<int>(std::min<std::uint64_t>(timeout_ns / 1'000'000, 60'000));
  int result;
  while ((result = libc::real().poll(&readable, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  return result > 0;
}

int mutex_lock(pthread_mutex_t* mutex, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).mutex_lock(mutex);
  sched().point();
  return lock_scheduled(mutex, "pthread_mutex_lock");
}

int mutex_trylock(pthread_mutex_t* mutex, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).mutex_trylock(mutex);
  sched().point();
  const int result = libc::for_caller(caller).mutex_trylock(mutex);
  if (result == EBUSY) sched().point(/*yielding=*/true);  // a spin on trylock lets others run
  return result;
}

int spin_lock(pthread_spinlock_t* lock, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).spin_lock(lock);
  sched().point();
  int result;
  while ((result = libc::for_caller(caller).spin_trylock(lock)) == EBUSY)
    sched().point(/*yielding=*/true);
  return result;
}

int spin_trylock(pthread_spinlock_t* lock, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).spin_trylock(lock);
  sched().point();
  const int result = libc::for_caller(caller).spin_trylock(lock);
  if (result == EBUSY) sched().point(/*yielding=*/true);
  return result;
}

int mutex_unlock(pthread_mutex_t* mutex, const void* caller) {
  const int result = libc::for_caller(caller).mutex_unlock(mutex);
  if (result != 0) return result;
  if (!scheduled(caller)) {
    scheduler::Scheduler::note_release_outside(mutex);
    return result;
  }
  unlocked(mutex);
  sched().point();
  return 0;
}

int cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).cond_wait(cond, mutex);
  sched().point();
  return wait_on_cond(cond, mutex, scheduler::kNoDeadline, "pthread_cond_wait");
}

int cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* abstime,
                   const void* caller) {
  if (!scheduled(caller) || abstime == nullptr)
    return libc::for_caller(caller).cond_timedwait(cond, mutex, abstime);
  if (abstime->tv_nsec < 0 || abstime->tv_nsec >= static_cast<long>(kNs)) return EINVAL;
  sched().point();
  return wait_on_cond(cond, mutex, cond_deadline(cond, *abstime), "pthread_cond_timedwait");
}

int cond_signal(pthread_cond_t* cond, const void* caller) {
  const int result = libc::for_caller(caller).cond_signal(cond);  // a waiter outside the schedule
  if (!scheduled(caller)) {
    scheduler::Scheduler::note_release_outside(cond);
    return result;
  }
  sched().wake_one(WaitKind::cond, cond);
  sched().point();
  return result;
}

int cond_broadcast(pthread_cond_t* cond, const void* caller) {
  const int result = libc::for_caller(caller).cond_broadcast(cond);
  if (!scheduled(caller)) {
    scheduler::Scheduler::note_release_outside(cond);
    return result;
  }
  sched().wake_all(WaitKind::cond, cond);
  sched().point();
  return result;
}

int create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg,
           const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).create(thread, attr, routine, arg);
  const scheduler::ThreadId id = sched().reserve_thread();
  auto* start = new Start{id, routine, arg};
  const int result = libc::for_caller(caller).create(thread, attr, start_scheduled, start);
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
  const bool program = !called_from_sanitizer(caller) && !called_from_rdma_stack(caller);
  // A join while a thread waits on a channel: the teardown window.
  if (program) interposer::joining(process_run());
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
  // The thread has left the schedule; the real join waits for it to be
  // gone. Without the scheduler the hang watchdog sees the program's join
  // (hang_watchdog.h): a thread that waits for another in sight.
  if (!program) return libc::for_caller(caller).join(thread, result);
  const hang::Blocked blocked("pthread_join");
  return libc::for_caller(caller).join(thread, result);
}

void exit(void* result) {
  sched().exit_thread();
  libc::real().exit(result);
  __builtin_unreachable();  // pthread_exit(3) does not return
}

int sched_yield(const void* caller) {
  if (!scheduled_pause(caller)) return libc::for_caller(caller).sched_yield();
  sched().point(/*yielding=*/true);
  return 0;
}

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

int mutex_timedlock(pthread_mutex_t* mutex, const timespec* abstime, const void* caller) {
  if (!scheduled(caller) || abstime == nullptr)
    return libc::for_caller(caller).mutex_timedlock(mutex, abstime);
  return mutex_lock_until(mutex, CLOCK_REALTIME, *abstime, "pthread_mutex_timedlock");
}

int mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock, const timespec* abstime,
                    const void* caller) {
  if (!scheduled(caller) || abstime == nullptr)
    return libc::for_caller(caller).mutex_clocklock(mutex, clock, abstime);
  if (!supported_clock(clock)) return EINVAL;
  return mutex_lock_until(mutex, clock, *abstime, "pthread_mutex_clocklock");
}

int cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                   const timespec* abstime, const void* caller) {
  if (!scheduled(caller) || abstime == nullptr)
    return libc::for_caller(caller).cond_clockwait(cond, mutex, clock, abstime);
  if (!supported_clock(clock) || !valid(*abstime)) return EINVAL;
  sched().point();
  return wait_on_cond(cond, mutex, deadline_of(clock, *abstime), "pthread_cond_clockwait");
}

int rwlock_rdlock(pthread_rwlock_t* rwlock, const void* caller) {
  if (!scheduled(caller) || shared_between_processes(rwlock))
    return libc::for_caller(caller).rwlock_rdlock(rwlock);
  sched().point();
  return rwlock_scheduled(rwlock, libc::for_caller(caller).rwlock_tryrdlock, scheduler::kNoDeadline,
                          "pthread_rwlock_rdlock");
}

int rwlock_wrlock(pthread_rwlock_t* rwlock, const void* caller) {
  if (!scheduled(caller) || shared_between_processes(rwlock))
    return libc::for_caller(caller).rwlock_wrlock(rwlock);
  sched().point();
  return rwlock_scheduled(rwlock, libc::for_caller(caller).rwlock_trywrlock, scheduler::kNoDeadline,
                          "pthread_rwlock_wrlock");
}

int rwlock_tryrdlock(pthread_rwlock_t* rwlock, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).rwlock_tryrdlock(rwlock);
  sched().point();
  const int result = libc::for_caller(caller).rwlock_tryrdlock(rwlock);
  if (result == EBUSY) sched().point(/*yielding=*/true);  // a spin lets others run
  return result;
}

int rwlock_trywrlock(pthread_rwlock_t* rwlock, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).rwlock_trywrlock(rwlock);
  sched().point();
  const int result = libc::for_caller(caller).rwlock_trywrlock(rwlock);
  if (result == EBUSY) sched().point(/*yielding=*/true);
  return result;
}

int rwlock_timedrdlock(pthread_rwlock_t* rwlock, const timespec* abstime, const void* caller) {
  if (!scheduled(caller) || abstime == nullptr || shared_between_processes(rwlock))
    return libc::for_caller(caller).rwlock_timedrdlock(rwlock, abstime);
  return rwlock_until(rwlock, libc::for_caller(caller).rwlock_tryrdlock, CLOCK_REALTIME, *abstime,
                      "pthread_rwlock_timedrdlock");
}

int rwlock_timedwrlock(pthread_rwlock_t* rwlock, const timespec* abstime, const void* caller) {
  if (!scheduled(caller) || abstime == nullptr || shared_between_processes(rwlock))
    return libc::for_caller(caller).rwlock_timedwrlock(rwlock, abstime);
  return rwlock_until(rwlock, libc::for_caller(caller).rwlock_trywrlock, CLOCK_REALTIME, *abstime,
                      "pthread_rwlock_timedwrlock");
}

int rwlock_clockrdlock(pthread_rwlock_t* rwlock, clockid_t clock, const timespec* abstime,
                       const void* caller) {
  if (!scheduled(caller) || abstime == nullptr || shared_between_processes(rwlock))
    return libc::for_caller(caller).rwlock_clockrdlock(rwlock, clock, abstime);
  return rwlock_until(rwlock, libc::for_caller(caller).rwlock_tryrdlock, clock, *abstime,
                      "pthread_rwlock_clockrdlock");
}

int rwlock_clockwrlock(pthread_rwlock_t* rwlock, clockid_t clock, const timespec* abstime,
                       const void* caller) {
  if (!scheduled(caller) || abstime == nullptr || shared_between_processes(rwlock))
    return libc::for_caller(caller).rwlock_clockwrlock(rwlock, clock, abstime);
  return rwlock_until(rwlock, libc::for_caller(caller).rwlock_trywrlock, clock, *abstime,
                      "pthread_rwlock_clockwrlock");
}

int rwlock_unlock(pthread_rwlock_t* rwlock, const void* caller) {
  const int result = libc::for_caller(caller).rwlock_unlock(rwlock);
  if (result != 0 || shared_between_processes(rwlock)) return result;
  if (!scheduled(caller)) {
    scheduler::Scheduler::note_release_outside(rwlock);
    return result;
  }
  // A reader's unlock may leave others reading: every waiter tries again,
  // and those that still cannot take it wait again.
  sched().wake_all(WaitKind::rwlock, rwlock);
  sched().point();
  return 0;
}

int sem_wait(sem_t* sem, const void* caller) {
  if (!scheduled(caller) || shared_between_processes(sem))
    return libc::for_caller(caller).sem_wait(sem);
  sched().point();
  return sem_wait_scheduled(sem, scheduler::kNoDeadline, "sem_wait");
}

int sem_trywait(sem_t* sem, const void* caller) {
  if (!scheduled(caller) || shared_between_processes(sem))
    return libc::for_caller(caller).sem_trywait(sem);
  sched().point();
  const int result = libc::for_caller(caller).sem_trywait(sem);
  if (result != 0 && errno == EAGAIN) {
    sched().point(/*yielding=*/true);  // a spin on trywait lets others run
    errno = EAGAIN;
  }
  return result;
}

int sem_timedwait(sem_t* sem, const timespec* abstime, const void* caller) {
  if (!scheduled(caller) || abstime == nullptr || shared_between_processes(sem))
    return libc::for_caller(caller).sem_timedwait(sem, abstime);
  return sem_until(sem, CLOCK_REALTIME, *abstime, "sem_timedwait");
}

int sem_clockwait(sem_t* sem, clockid_t clock, const timespec* abstime, const void* caller) {
  if (!scheduled(caller) || abstime == nullptr || shared_between_processes(sem))
    return libc::for_caller(caller).sem_clockwait(sem, clock, abstime);
  return sem_until(sem, clock, *abstime, "sem_clockwait");
}

int sem_post(sem_t* sem, const void* caller) {
  const int result = libc::for_caller(caller).sem_post(sem);
  if (result != 0 || shared_between_processes(sem)) return result;
  if (!scheduled(caller)) {
    scheduler::Scheduler::note_release_outside(sem);
    return result;
  }
  // One more unit: the earliest waiter tries again (sem_post(3): "another
  // process or thread blocked in a sem_wait(3) call will be woken up").
  sched().wake_one(WaitKind::semaphore, sem);
  sched().point();
  return 0;
}

namespace {

// Application threads blocked without the scheduler in accept(2) or a
// receive on a socket (outside_waiters()); relaxed: a snapshot, read by a
// thread about to wait in the device, whose own calls order nothing
// else. Not a thread in poll, epoll or select: its fds may include a
// verbs channel's, whose event would wake it into verbs calls (UCX's and
// Open MPI's progress threads wait so), and which fds an epoll set holds
// costs /proc to learn; a socket is never a verbs fd. (Counting a long
// poll or select of sockets only was tried: qperf's rc_bi_bw, whose side
// done first waits in select for the other's results, then lost its
// peer's sync after the test in 4 of 16 runs on a loaded machine.)
std::atomic<int> g_outside_waiters{0};
// Whether an OutsideWait marked the simulated device waiting because every
// application thread waited outside (provider::idle_outside); the first
// wait to end takes the mark back.
std::atomic<bool> g_marked_idle_outside{false};
// The fds those threads wait on, plus one (0: a free slot), and how many
// found no slot: the mark stands for all of them, and the device looks at
// them again after every frame (sim/fabric/fabric.h, Fabric::begin_outside), so
// with one unknown there is no mark.
constexpr std::size_t kOutsideFdSlots = 64;
std::array<std::atomic<int>, kOutsideFdSlots> g_outside_fds{};
std::atomic<int> g_outside_fds_unknown{0};

// Counts the calling thread in g_outside_waiters for its scope, when the
// call may block and comes from the program (librdmacm's own receives are
// counted apart, as the device's threads). The last application
// thread to wait so marks a process on a shared fabric waiting in its
// device, as the scheduler's outside wait does (HarnessWorld::
// wait_external): none of its threads can make a verbs call before the
// world outside acts, and a peer polling for it (UCX's UD put, whose
// target sits in recv(2) on its control socket) sees quiescence instead of
// giving up after the grace period.
class OutsideWait {
 public:
  OutsideWait(int fd, const void* caller, bool may_block)
      : counted_(may_block && !called_from_rdma_stack(caller)) {
    if (!counted_) return;
    for (std::size_t i = 0; i < kOutsideFdSlots && slot_ == kNoSlot; ++i) {
      int free = 0;
      if (g_outside_fds[i].compare_exchange_strong(free, fd + 1, std::memory_order_acq_rel))
        slot_ = i;
    }
    if (slot_ == kNoSlot) g_outside_fds_unknown.fetch_add(1, std::memory_order_acq_rel);
    g_outside_waiters.fetch_add(1, std::memory_order_relaxed);
    if (g_outside_fds_unknown.load(std::memory_order_acquire) == 0 && provider::shares_fabric() &&
        Run::every_thread_waits_outside() &&
        !g_marked_idle_outside.exchange(true, std::memory_order_acq_rel)) {
      std::array<int, kOutsideFdSlots> fds{};
      std::size_t count = 0;
      for (const std::atomic<int>& slot : g_outside_fds)
        if (const int held = slot.load(std::memory_order_acquire); held != 0)
          fds[count++] = held - 1;
      provider::idle_outside(true, std::span<const int>(fds.data(), count));
    }
  }
  ~OutsideWait() {
    if (!counted_) return;
    g_outside_waiters.fetch_sub(1, std::memory_order_relaxed);
    if (g_marked_idle_outside.exchange(false, std::memory_order_acq_rel))
      provider::idle_outside(false);
    if (slot_ == kNoSlot)
      g_outside_fds_unknown.fetch_sub(1, std::memory_order_acq_rel);
    else
      g_outside_fds[slot_].store(0, std::memory_order_release);
  }
  OutsideWait(const OutsideWait&) = delete;
  OutsideWait& operator=(const OutsideWait&) = delete;

 private:
  static constexpr std::size_t kNoSlot = kOutsideFdSlots;
  const bool counted_;
  std::size_t slot_ = kNoSlot;
};

}  // namespace

int outside_waiters() {
  return g_outside_waiters.load(std::memory_order_relaxed);
}

int poll(pollfd* fds, nfds_t n, int timeout_ms, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).poll(fds, n, timeout_ms);
  const FdList watched = fds_of(fds, n);
  return wait_on_fds(
      watched, watched, ns_of_ms(timeout_ms), "poll",
      [&] { return libc::for_caller(caller).poll(fds, n, 0); },
      [&] { return libc::for_caller(caller).poll(fds, n, timeout_ms); });
}

int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* sigmask,
          const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && !valid(*timeout)))
    return libc::for_caller(caller).ppoll(fds, n, timeout, sigmask);
  const FdList watched = fds_of(fds, n);
  const timespec zero{0, 0};
  return wait_on_fds(
      watched, watched, ns_of_timeout(timeout), "ppoll",
      [&] { return libc::for_caller(caller).ppoll(fds, n, &zero, sigmask); },
      [&] { return libc::for_caller(caller).ppoll(fds, n, timeout, sigmask); });
}

int epoll_wait(int epfd, epoll_event* events, int max_events, int timeout_ms, const void* caller) {
  if (!scheduled(caller))
    return libc::for_caller(caller).epoll_wait(epfd, events, max_events, timeout_ms);
  return epoll_scheduled(
      epfd, events, max_events, ns_of_ms(timeout_ms), nullptr, "epoll_wait",
      [&] { return libc::for_caller(caller).epoll_wait(epfd, events, max_events, timeout_ms); });
}

int epoll_pwait(int epfd, epoll_event* events, int max_events, int timeout_ms,
                const sigset_t* sigmask, const void* caller) {
  if (!scheduled(caller))
    return libc::for_caller(caller).epoll_pwait(epfd, events, max_events, timeout_ms, sigmask);
  return epoll_scheduled(
      epfd, events, max_events, ns_of_ms(timeout_ms), sigmask, "epoll_pwait", [&] {
        return libc::for_caller(caller).epoll_pwait(epfd, events, max_events, timeout_ms, sigmask);
      });
}

int epoll_pwait2(int epfd, epoll_event* events, int max_events, const timespec* timeout,
                 const sigset_t* sigmask, const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && (timeout->tv_sec < 0 || !valid(*timeout))))
    return libc::for_caller(caller).epoll_pwait2(epfd, events, max_events, timeout, sigmask);
  return epoll_scheduled(
      epfd, events, max_events, ns_of_timeout(timeout), sigmask, "epoll_pwait2", [&] {
        return libc::for_caller(caller).epoll_pwait2(epfd, events, max_events, timeout, sigmask);
      });
}

int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, timeval* timeout,
           const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && (timeout->tv_sec < 0 || timeout->tv_usec < 0)))
    return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, timeout);
  const FdList watched = fds_of(nfds, readfds, writefds, exceptfds);
  if (!watched.read_only)
    return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, timeout);
  // Every check starts from the sets the program asked with: select(2)
  // leaves only the ready fds in them.
  fd_set asked;
  FD_ZERO(&asked);
  if (readfds != nullptr) asked = *readfds;
  const std::uint64_t timeout_ns = timeout == nullptr ? scheduler::kNoDeadline
                                                      : std::uint64_t(timeout->tv_sec) * kNs +
                                                            std::uint64_t(timeout->tv_usec) * 1000;
  return wait_on_fds(
      watched, watched, timeout_ns, "select",
      [&] {
        if (readfds != nullptr) *readfds = asked;
        timeval zero{0, 0};
        return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, &zero);
      },
      [&] {
        if (readfds != nullptr) *readfds = asked;
        return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, timeout);
      });
}

int pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, const timespec* timeout,
            const sigset_t* sigmask, const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && (timeout->tv_sec < 0 || !valid(*timeout))))
    return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask);
  const FdList watched = fds_of(nfds, readfds, writefds, exceptfds);
  if (!watched.read_only)
    return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask);
  fd_set asked;
  FD_ZERO(&asked);
  if (readfds != nullptr) asked = *readfds;
  const timespec zero{0, 0};
  return wait_on_fds(
      watched, watched, ns_of_timeout(timeout), "pselect",
      [&] {
        if (readfds != nullptr) *readfds = asked;
        return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, &zero, sigmask);
      },
      [&] {
        if (readfds != nullptr) *readfds = asked;
        return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, timeout,
                                                sigmask);
      });
}

namespace {

bool blocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) == 0;
}

// A scheduled thread's blocking read-like call on a fd that is not a verbs
// event fd (a socket, a pipe, a listening socket): it waits as poll(2) for
// the fd to be readable (modelled, fed from outside: the others run, and
// the process counts as waiting in its device while all wait), then the
// call itself returns at once, or blocks as the kernel's would when
// another thread took what came first. False: poll failed (errno set).
bool await_readable(int fd, const void* caller) {
  pollfd one{fd, POLLIN, 0};
  return poll(&one, 1, -1, caller) >= 0;
}

// accept(2) and the receives on a socket: a scheduled thread waits for the
// fd to be readable (await_readable) when the call would block; without
// the scheduler the thread counts as waiting outside (OutsideWait) for
// the call. `receive` is the C library's call.
template <class Receive>
auto receive_on_socket(int fd, bool may_block, const void* caller, const Receive& receive) {
  if (scheduled(caller)) {
    if (may_block && !HarnessWorld::poll_readable(fd) && blocking(fd) &&
        !await_readable(fd, caller))
      return decltype(receive())(-1);
    return receive();
  }
  const OutsideWait counted(fd, caller, may_block);
  return receive();
}

}  // namespace

ssize_t read(int fd, void* buffer, size_t count, const void* caller) {
  if (cm_files::refuses_read(fd)) return -1;
  // Only a read that would block is looked at: a non-blocking fd, or one
  // with something to read, is the C library's at once. The registry is
  // asked last, and must be: the harness itself reads files through
  // libstdc++ (a caller outside the RDMA stack) while it holds the
  // interposer's lock (Run::replay_line), and a file is always readable.
  // The poll costs a system call (a 1-byte read of /dev/zero by a
  // scheduled thread: 615 ns, 240 ns without the scheduler).
  if (scheduled(caller) && !HarnessWorld::poll_readable(fd) && blocking(fd)) {
    if (world.event_fds(&fd, 1).any) {
      Readable readable;
      while ((readable = wait_readable(fd, "read")) == Readable::held) release_held_for_waiter(process_run(), fd);
      if (readable == Readable::interrupted) {
        errno = EINTR;
        return -1;
      }
    } else if (!await_readable(fd, caller)) {
      return -1;
    }
  }
  return libc::for_caller(caller).read(fd, buffer, count);
}

int accept4(int fd, sockaddr* address, socklen_t* length, int flags, const void* caller) {
  // A connection to take is a readable listening socket (accept(2)).
  return receive_on_socket(fd, true, caller, [&] {
    return libc::for_caller(caller).accept4(fd, address, length, flags);
  });
}

ssize_t recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                 socklen_t* address_length, const void* caller) {
  return receive_on_socket(fd, (flags & MSG_DONTWAIT) == 0, caller, [&] {
    return libc::for_caller(caller).recvfrom(fd, buffer, length, flags, address, address_length);
  });
}

ssize_t recvmsg(int fd, msghdr* message, int flags, const void* caller) {
  return receive_on_socket(fd, (flags & MSG_DONTWAIT) == 0, caller,
                           [&] { return libc::for_caller(caller).recvmsg(fd, message, flags); });
}

}  // namespace verbfault::interposer::thread_calls

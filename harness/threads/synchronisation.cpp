// Threads, locks, conditions, rwlocks and semaphores under the scheduler:
// a scheduled thread waits for them in the scheduler, never in the kernel,
// and each call is a scheduling point (thread_calls.h).
#include "thread_world.h"

#include <pthread.h>
#include <semaphore.h>

#include <optional>

namespace verbfault::interposer::thread_calls {

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

// The virtual deadline of a condition's absolute timeout: its clock is
// CLOCK_REALTIME unless pthread_condattr_setclock chose CLOCK_MONOTONIC
// (glibc keeps the choice in bit 1 of __wrefs).
std::uint64_t cond_deadline(const pthread_cond_t* cond, const timespec& abstime) {
  return deadline_of((cond->__data.__wrefs & 2) != 0 ? CLOCK_MONOTONIC : CLOCK_REALTIME, abstime);
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

}  // namespace

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
  if (scheduler::Scheduler* scheduler = started_scheduler()) scheduler->exit_thread();
  libc::real().exit(result);
  __builtin_unreachable();  // pthread_exit(3) does not return
}

int sched_yield(const void* caller) {
  if (!scheduled_pause(caller)) return libc::for_caller(caller).sched_yield();
  sched().point(/*yielding=*/true);
  return 0;
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

}  // namespace verbfault::interposer::thread_calls

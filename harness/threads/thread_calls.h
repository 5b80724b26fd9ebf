// The program's thread, sleep and clock calls (the front door's pthread_*,
// sched_yield, sleeps and clocks forward here). While the scheduler runs
// (threads/scheduler), a call of a scheduled thread from the program's
// own code is a scheduling point, its waits are modelled there, and its
// clocks read virtual time; every other call is the C library's own.
#pragma once

#include "scheduler.h"

#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

namespace verbfault::interposer::thread_calls {

// Starts the run's `scheduler` (the process's run, when VERBFAULT_THREADS
// asks for it) and makes it the one the libc wrappers use: the calling
// thread is thread 0.
void start(scheduler::Scheduler& scheduler, const scheduler::Options& options);
// start() made from another thread for the thread `handle` (`tid`), which
// then calls scheduler.enter_as_started_thread() (Scheduler::start_for).
void start_for(scheduler::Scheduler& scheduler, const scheduler::Options& options, pthread_t handle,
               pid_t tid);
// Starts the process's watchdog thread, once (the scheduler's escapes,
// the hang watchdog: hang_watchdog.h).
void start_watchdog();
// In a forked child (the Run's fork handler): its own schedule and
// watchdog.
void after_fork_in_child();
// The harness's own threads in this process (the watchdog): not the
// program's.
int harness_threads();
// A fork server waiting for the program's first verbs call
// (interposer/fork_server.h) has the first call of the program that a
// seed's schedule would have counted noted from here on: a scheduling
// point (a lock, a sleep, a wait) or a read of the virtual clock, which a
// run from exec makes from load. Its children, which take their run at
// the first verbs call, could not start where such a run does. Off
// again once the server serves: its children's calls are their runs'.
void note_unscheduled_calls(bool on);
// The return address of that first call, or null.
const void* first_unscheduled_call();
// A verbs call of the program: a scheduling point. `yielding`: the
// thread's previous call made no progress (an empty poll).
void verbs_point();
// The program opened a device of a real provider: its completions come in
// real time (the scheduler's preemptions stay short).
void real_device_opened();
// After a poll: whether it was empty (the thread's next point yields).
void polled(bool empty);
// Before a verbs call reads `fd` and blocks while it is empty
// (ibv_get_cq_event, ibv_get_async_event): a scheduled thread waits in
// the scheduler, not in the kernel. `ready` when the read will not block
// (or the thread is not scheduled, or the fd is non-blocking); `held` when
// the wait ended for completions the harness held back (release them,
// check, and wait again); `interrupted` when a signal handler without
// SA_RESTART ended it, as it ends a real read(2): the call fails with
// EINTR.
enum class Readable { ready, held, interrupted };
Readable wait_readable(int fd, const char* call);
// For a thread the scheduler does not manage (wait_readable returned at
// once): waits until `fd` is readable as a read(2) of it would, restarted
// after a handler with SA_RESTART, `interrupted` by one without.
Readable wait_readable_outside(int fd);
// Waits up to `timeout_ns` for `fd` (a channel's, or the provider's fd
// behind it) to be readable; whether it is. A scheduled thread waits in the scheduler
// on the virtual clock (the others run meanwhile, and may be what makes it
// readable); any other in real time. `what` names the wait in a report.
bool wait_readable_for(int fd, std::uint64_t timeout_ns, const char* call, const char* what);

int mutex_lock(pthread_mutex_t* mutex, const void* caller);
int mutex_trylock(pthread_mutex_t* mutex, const void* caller);
// pthread_spin_lock spins at scheduling points, each a yield: the holder,
// which may be waiting for its turn, runs (UCX's spin locks, held by its
// async thread, kept its main thread spinning until the watchdog released
// it). pthread_spin_unlock needs nothing: the spinners are runnable.
int spin_lock(pthread_spinlock_t* lock, const void* caller);
int spin_trylock(pthread_spinlock_t* lock, const void* caller);
int mutex_unlock(pthread_mutex_t* mutex, const void* caller);
int cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex, const void* caller);
int cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* abstime,
                   const void* caller);
int cond_signal(pthread_cond_t* cond, const void* caller);
int cond_broadcast(pthread_cond_t* cond, const void* caller);
int create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg,
           const void* caller);
int join(pthread_t thread, void** result, const void* caller);
[[noreturn]] void exit(void* result);
int sched_yield(const void* caller);
int nanosleep(const timespec* request, timespec* remaining, const void* caller);
int clock_nanosleep(clockid_t clock, int flags, const timespec* request, timespec* remaining,
                    const void* caller);
int usleep(useconds_t microseconds, const void* caller);
unsigned sleep(unsigned seconds, const void* caller);
int clock_gettime(clockid_t clock, timespec* now, const void* caller);
int gettimeofday(timeval* now, void* zone, const void* caller);
time_t time(time_t* now, const void* caller);

// Timed locks and waits: their deadlines are on the virtual clock.
int mutex_timedlock(pthread_mutex_t* mutex, const timespec* abstime, const void* caller);
int mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock, const timespec* abstime,
                    const void* caller);
int cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                   const timespec* abstime, const void* caller);

// Read-write locks and semaphores (WaitKind::rwlock, WaitKind::semaphore);
// those shared between processes stay the C library's.
int rwlock_rdlock(pthread_rwlock_t* rwlock, const void* caller);
int rwlock_wrlock(pthread_rwlock_t* rwlock, const void* caller);
int rwlock_tryrdlock(pthread_rwlock_t* rwlock, const void* caller);
int rwlock_trywrlock(pthread_rwlock_t* rwlock, const void* caller);
int rwlock_timedrdlock(pthread_rwlock_t* rwlock, const timespec* abstime, const void* caller);
int rwlock_timedwrlock(pthread_rwlock_t* rwlock, const timespec* abstime, const void* caller);
int rwlock_clockrdlock(pthread_rwlock_t* rwlock, clockid_t clock, const timespec* abstime,
                       const void* caller);
int rwlock_clockwrlock(pthread_rwlock_t* rwlock, clockid_t clock, const timespec* abstime,
                       const void* caller);
int rwlock_unlock(pthread_rwlock_t* rwlock, const void* caller);
int sem_wait(sem_t* sem, const void* caller);
int sem_trywait(sem_t* sem, const void* caller);
int sem_timedwait(sem_t* sem, const timespec* abstime, const void* caller);
int sem_clockwait(sem_t* sem, clockid_t clock, const timespec* abstime, const void* caller);
int sem_post(sem_t* sem, const void* caller);

// Waits on fds: modelled (WaitKind::fd, on the virtual clock) when they
// include a verbs channel's or async fd and only wait to read; any other
// passes through.
int poll(pollfd* fds, nfds_t n, int timeout_ms, const void* caller);
int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* sigmask,
          const void* caller);
int epoll_wait(int epfd, epoll_event* events, int max_events, int timeout_ms, const void* caller);
int epoll_pwait(int epfd, epoll_event* events, int max_events, int timeout_ms,
                const sigset_t* sigmask, const void* caller);
int epoll_pwait2(int epfd, epoll_event* events, int max_events, const timespec* timeout,
                 const sigset_t* sigmask, const void* caller);
int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, timeval* timeout,
           const void* caller);
int pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, const timespec* timeout,
            const sigset_t* sigmask, const void* caller);
ssize_t read(int fd, void* buffer, size_t count, const void* caller);
// accept(2) on a blocking listening socket: a scheduled thread waits for
// it to be readable as poll does (modelled, fed from outside), then
// accepts.
int accept4(int fd, sockaddr* address, socklen_t* length, int flags, const void* caller);
// recv(2), recvfrom(2), recvmsg(2) on a blocking socket, without
// MSG_DONTWAIT: the same (recv is recvfrom without an address).
ssize_t recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                 socklen_t* address_length, const void* caller);
ssize_t recvmsg(int fd, msghdr* message, int flags, const void* caller);

// Application threads blocked now, without the thread scheduler, in
// accept(2) or a receive on a blocking socket: such a thread makes no
// verbs call until something outside the process wakes it (libfabric's
// name server thread in accept, a server reading its control socket).
// Run::may_block_in_device counts them out of the threads that could
// run. Lock-free; a snapshot.
int outside_waiters();

// Whether the calling thread is scheduled and the call comes from the
// program: the calls that are scheduling points.
bool scheduled(const void* caller);

}  // namespace verbfault::interposer::thread_calls

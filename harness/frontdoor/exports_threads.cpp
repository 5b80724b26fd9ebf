// Exported thread, sleep and clock calls of the C library: each forwards
// to the thread calls (threads/thread_calls.h) with its caller's address,
// so that only the program's own calls are scheduling points. They carry
// glibc's symbol versions (libibverbs.map.in): a program built against glibc
// binds to them when libverbfault.so is preloaded or linked first. Where
// glibc 2.34 moved a function into libc under a new version, the old one
// is exported too.
#include "caller.h"
#include "route_netlink.h"
#include "socket_addresses.h"
#include "thread_calls.h"

#include <sched.h>
#include <unistd.h>

using namespace verbfault::interposer;

namespace {

// The peer's address as the program sees it: a simulated port's, not its
// loopback stand-in (socket_addresses.h).
template <class Result>
Result shown(Result result, sockaddr* address, socklen_t capacity, const socklen_t* length) {
  if (result >= 0) socket_addresses::from_kernel(address, capacity, length);
  return result;
}

socklen_t capacity_of(const socklen_t* length) {
  return length != nullptr ? *length : 0;
}

// A followed NETLINK_ROUTE socket (interposer/route_netlink.h): its
// datagrams through recvmsg, with the simulated interfaces in its dumps.
ssize_t kernel_recvmsg(int fd, msghdr* message, int flags, const void* caller) {
  return thread_calls::recvmsg(fd, message, flags, caller);
}

ssize_t netlink_recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                         socklen_t* address_length, const void* caller) {
  iovec vector{buffer, length};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  message.msg_name = address;
  message.msg_namelen = address_length != nullptr ? *address_length : 0;
  const ssize_t result = route_netlink::received(fd, &message, flags, kernel_recvmsg, caller);
  if (result >= 0 && address_length != nullptr) *address_length = message.msg_namelen;
  return result;
}

}  // namespace

extern "C" {

int pthread_mutex_lock(pthread_mutex_t* mutex) {
  return thread_calls::mutex_lock(mutex, VERBFAULT_CALLER);
}

int pthread_mutex_unlock(pthread_mutex_t* mutex) {
  return thread_calls::mutex_unlock(mutex, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_mutex_trylock@@GLIBC_2.34"),
               symver("pthread_mutex_trylock@GLIBC_2.2.5"))) int
verbfault_pthread_mutex_trylock(pthread_mutex_t* mutex) {
  return thread_calls::mutex_trylock(mutex, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_spin_lock@@GLIBC_2.34"),
               symver("pthread_spin_lock@GLIBC_2.2.5"))) int
verbfault_pthread_spin_lock(pthread_spinlock_t* lock) {
  return thread_calls::spin_lock(lock, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_spin_trylock@@GLIBC_2.34"),
               symver("pthread_spin_trylock@GLIBC_2.2.5"))) int
verbfault_pthread_spin_trylock(pthread_spinlock_t* lock) {
  return thread_calls::spin_trylock(lock, VERBFAULT_CALLER);
}

// Only the condition variables of glibc 2.3.2 and later: the 2.2.5 ones
// have another layout, and stay glibc's.
__attribute__((symver("pthread_cond_wait@@GLIBC_2.3.2"))) int verbfault_pthread_cond_wait(
    pthread_cond_t* cond, pthread_mutex_t* mutex) {
  return thread_calls::cond_wait(cond, mutex, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_cond_timedwait@@GLIBC_2.3.2"))) int verbfault_pthread_cond_timedwait(
    pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* abstime) {
  return thread_calls::cond_timedwait(cond, mutex, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_cond_signal@@GLIBC_2.3.2"))) int verbfault_pthread_cond_signal(
    pthread_cond_t* cond) {
  return thread_calls::cond_signal(cond, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_cond_broadcast@@GLIBC_2.3.2"))) int verbfault_pthread_cond_broadcast(
    pthread_cond_t* cond) {
  return thread_calls::cond_broadcast(cond, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_create@@GLIBC_2.34"), symver("pthread_create@GLIBC_2.2.5"))) int
verbfault_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                         void* arg) {
  return thread_calls::create(thread, attr, start, arg, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_join@@GLIBC_2.34"), symver("pthread_join@GLIBC_2.2.5"))) int
verbfault_pthread_join(pthread_t thread, void** result) {
  return thread_calls::join(thread, result, VERBFAULT_CALLER);
}

void pthread_exit(void* result) {
  thread_calls::exit(result);
}

int sched_yield() {
  return thread_calls::sched_yield(VERBFAULT_CALLER);
}

int nanosleep(const timespec* request, timespec* remaining) {
  return thread_calls::nanosleep(request, remaining, VERBFAULT_CALLER);
}

__attribute__((symver("clock_nanosleep@@GLIBC_2.17"), symver("clock_nanosleep@GLIBC_2.2.5"))) int
verbfault_clock_nanosleep(clockid_t clock, int flags, const timespec* request,
                          timespec* remaining) {
  return thread_calls::clock_nanosleep(clock, flags, request, remaining, VERBFAULT_CALLER);
}

int usleep(useconds_t microseconds) {
  return thread_calls::usleep(microseconds, VERBFAULT_CALLER);
}

unsigned sleep(unsigned seconds) {
  return thread_calls::sleep(seconds, VERBFAULT_CALLER);
}

__attribute__((symver("clock_gettime@@GLIBC_2.17"), symver("clock_gettime@GLIBC_2.2.5"))) int
verbfault_clock_gettime(clockid_t clock, timespec* now) {
  return thread_calls::clock_gettime(clock, now, VERBFAULT_CALLER);
}

int gettimeofday(timeval* now, void* zone) {
  return thread_calls::gettimeofday(now, zone, VERBFAULT_CALLER);
}

time_t time(time_t* now) {
  return thread_calls::time(now, VERBFAULT_CALLER);
}

// Timed locks and waits (glibc 2.30 added the clock* variants; 2.34 moved
// all of them into libc under a new version).
__attribute__((symver("pthread_mutex_timedlock@@GLIBC_2.34"),
               symver("pthread_mutex_timedlock@GLIBC_2.2.5"))) int
verbfault_pthread_mutex_timedlock(pthread_mutex_t* mutex, const timespec* abstime) {
  return thread_calls::mutex_timedlock(mutex, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_mutex_clocklock@@GLIBC_2.34"),
               symver("pthread_mutex_clocklock@GLIBC_2.30"))) int
verbfault_pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock,
                                  const timespec* abstime) {
  return thread_calls::mutex_clocklock(mutex, clock, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_cond_clockwait@@GLIBC_2.34"),
               symver("pthread_cond_clockwait@GLIBC_2.30"))) int
verbfault_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                                 const timespec* abstime) {
  return thread_calls::cond_clockwait(cond, mutex, clock, abstime, VERBFAULT_CALLER);
}

// Read-write locks: GLIBC_2.34 and the older GLIBC_2.2.5 (GLIBC_2.30 for
// the clock* variants) name one function in glibc 2.36.
__attribute__((symver("pthread_rwlock_rdlock@@GLIBC_2.34"),
               symver("pthread_rwlock_rdlock@GLIBC_2.2.5"))) int
verbfault_pthread_rwlock_rdlock(pthread_rwlock_t* rwlock) {
  return thread_calls::rwlock_rdlock(rwlock, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_wrlock@@GLIBC_2.34"),
               symver("pthread_rwlock_wrlock@GLIBC_2.2.5"))) int
verbfault_pthread_rwlock_wrlock(pthread_rwlock_t* rwlock) {
  return thread_calls::rwlock_wrlock(rwlock, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_tryrdlock@@GLIBC_2.34"),
               symver("pthread_rwlock_tryrdlock@GLIBC_2.2.5"))) int
verbfault_pthread_rwlock_tryrdlock(pthread_rwlock_t* rwlock) {
  return thread_calls::rwlock_tryrdlock(rwlock, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_trywrlock@@GLIBC_2.34"),
               symver("pthread_rwlock_trywrlock@GLIBC_2.2.5"))) int
verbfault_pthread_rwlock_trywrlock(pthread_rwlock_t* rwlock) {
  return thread_calls::rwlock_trywrlock(rwlock, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_timedrdlock@@GLIBC_2.34"),
               symver("pthread_rwlock_timedrdlock@GLIBC_2.2.5"))) int
verbfault_pthread_rwlock_timedrdlock(pthread_rwlock_t* rwlock, const timespec* abstime) {
  return thread_calls::rwlock_timedrdlock(rwlock, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_timedwrlock@@GLIBC_2.34"),
               symver("pthread_rwlock_timedwrlock@GLIBC_2.2.5"))) int
verbfault_pthread_rwlock_timedwrlock(pthread_rwlock_t* rwlock, const timespec* abstime) {
  return thread_calls::rwlock_timedwrlock(rwlock, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_clockrdlock@@GLIBC_2.34"),
               symver("pthread_rwlock_clockrdlock@GLIBC_2.30"))) int
verbfault_pthread_rwlock_clockrdlock(pthread_rwlock_t* rwlock, clockid_t clock,
                                     const timespec* abstime) {
  return thread_calls::rwlock_clockrdlock(rwlock, clock, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_clockwrlock@@GLIBC_2.34"),
               symver("pthread_rwlock_clockwrlock@GLIBC_2.30"))) int
verbfault_pthread_rwlock_clockwrlock(pthread_rwlock_t* rwlock, clockid_t clock,
                                     const timespec* abstime) {
  return thread_calls::rwlock_clockwrlock(rwlock, clock, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("pthread_rwlock_unlock@@GLIBC_2.34"),
               symver("pthread_rwlock_unlock@GLIBC_2.2.5"))) int
verbfault_pthread_rwlock_unlock(pthread_rwlock_t* rwlock) {
  return thread_calls::rwlock_unlock(rwlock, VERBFAULT_CALLER);
}

// Semaphores: the same, GLIBC_2.34 and GLIBC_2.2.5 (sem_clockwait: 2.30).
__attribute__((symver("sem_wait@@GLIBC_2.34"), symver("sem_wait@GLIBC_2.2.5"))) int
verbfault_sem_wait(sem_t* sem) {
  return thread_calls::sem_wait(sem, VERBFAULT_CALLER);
}

__attribute__((symver("sem_trywait@@GLIBC_2.34"), symver("sem_trywait@GLIBC_2.2.5"))) int
verbfault_sem_trywait(sem_t* sem) {
  return thread_calls::sem_trywait(sem, VERBFAULT_CALLER);
}

__attribute__((symver("sem_timedwait@@GLIBC_2.34"), symver("sem_timedwait@GLIBC_2.2.5"))) int
verbfault_sem_timedwait(sem_t* sem, const timespec* abstime) {
  return thread_calls::sem_timedwait(sem, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("sem_clockwait@@GLIBC_2.34"), symver("sem_clockwait@GLIBC_2.30"))) int
verbfault_sem_clockwait(sem_t* sem, clockid_t clock, const timespec* abstime) {
  return thread_calls::sem_clockwait(sem, clock, abstime, VERBFAULT_CALLER);
}

__attribute__((symver("sem_post@@GLIBC_2.34"), symver("sem_post@GLIBC_2.2.5"))) int
verbfault_sem_post(sem_t* sem) {
  return thread_calls::sem_post(sem, VERBFAULT_CALLER);
}

// Waits on fds, each under its one glibc version (libibverbs.map.in).
int poll(pollfd* fds, nfds_t n, int timeout) {
  return thread_calls::poll(fds, n, timeout, VERBFAULT_CALLER);
}

int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* sigmask) {
  return thread_calls::ppoll(fds, n, timeout, sigmask, VERBFAULT_CALLER);
}

int epoll_wait(int epfd, epoll_event* events, int max_events, int timeout) {
  return thread_calls::epoll_wait(epfd, events, max_events, timeout, VERBFAULT_CALLER);
}

int epoll_pwait(int epfd, epoll_event* events, int max_events, int timeout,
                const sigset_t* sigmask) {
  return thread_calls::epoll_pwait(epfd, events, max_events, timeout, sigmask, VERBFAULT_CALLER);
}

int epoll_pwait2(int epfd, epoll_event* events, int max_events, const timespec* timeout,
                 const sigset_t* sigmask) {
  return thread_calls::epoll_pwait2(epfd, events, max_events, timeout, sigmask, VERBFAULT_CALLER);
}

int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, timeval* timeout) {
  return thread_calls::select(nfds, readfds, writefds, exceptfds, timeout, VERBFAULT_CALLER);
}

int pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, const timespec* timeout,
            const sigset_t* sigmask) {
  return thread_calls::pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask,
                               VERBFAULT_CALLER);
}

ssize_t read(int fd, void* buffer, size_t count) {
  return thread_calls::read(fd, buffer, count, VERBFAULT_CALLER);
}

// accept(2) is accept4(2) without flags, in glibc as here.
int accept(int fd, sockaddr* address, socklen_t* length) {
  const socklen_t capacity = capacity_of(length);
  return shown(thread_calls::accept4(fd, address, length, 0, VERBFAULT_CALLER), address, capacity,
               length);
}

int accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  const socklen_t capacity = capacity_of(length);
  return shown(thread_calls::accept4(fd, address, length, flags, VERBFAULT_CALLER), address,
               capacity, length);
}

// recv(2) is recvfrom(2) without an address, in glibc as here.
ssize_t recv(int fd, void* buffer, size_t length, int flags) {
  if (route_netlink::followed(fd))
    return netlink_recvfrom(fd, buffer, length, flags, nullptr, nullptr, VERBFAULT_CALLER);
  return thread_calls::recvfrom(fd, buffer, length, flags, nullptr, nullptr, VERBFAULT_CALLER);
}

ssize_t recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                 socklen_t* address_length) {
  if (route_netlink::followed(fd))
    return netlink_recvfrom(fd, buffer, length, flags, address, address_length,
                            VERBFAULT_CALLER);
  const socklen_t capacity = capacity_of(address_length);
  return shown(
      thread_calls::recvfrom(fd, buffer, length, flags, address, address_length, VERBFAULT_CALLER),
      address, capacity, address_length);
}

ssize_t recvmsg(int fd, msghdr* message, int flags) {
  if (route_netlink::followed(fd))
    return route_netlink::received(fd, message, flags, kernel_recvmsg, VERBFAULT_CALLER);
  if (message == nullptr) return thread_calls::recvmsg(fd, message, flags, VERBFAULT_CALLER);
  const socklen_t capacity = message->msg_namelen;
  return shown(thread_calls::recvmsg(fd, message, flags, VERBFAULT_CALLER),
               static_cast<sockaddr*>(message->msg_name), capacity, &message->msg_namelen);
}

// What a program built with _FORTIFY_SOURCE calls instead of poll, ppoll,
// read, recv and recvfrom: glibc's size checks (debug/poll_chk.c,
// debug/read_chk.c, debug/recv_chk.c, debug/recvfrom_chk.c), then
// the same as the plain calls.
[[noreturn]] void __chk_fail();

int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fds_length) {
  if (fds_length / sizeof *fds < n) __chk_fail();
  return thread_calls::poll(fds, n, timeout, VERBFAULT_CALLER);
}

int __ppoll_chk(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* sigmask,
                size_t fds_length) {
  if (fds_length / sizeof *fds < n) __chk_fail();
  return thread_calls::ppoll(fds, n, timeout, sigmask, VERBFAULT_CALLER);
}

ssize_t __read_chk(int fd, void* buffer, size_t count, size_t buffer_length) {
  if (count > buffer_length) __chk_fail();
  return thread_calls::read(fd, buffer, count, VERBFAULT_CALLER);
}

ssize_t __recv_chk(int fd, void* buffer, size_t length, size_t buffer_length, int flags) {
  if (length > buffer_length) __chk_fail();
  return thread_calls::recvfrom(fd, buffer, length, flags, nullptr, nullptr, VERBFAULT_CALLER);
}

ssize_t __recvfrom_chk(int fd, void* buffer, size_t length, size_t buffer_length, int flags,
                       sockaddr* address, socklen_t* address_length) {
  if (length > buffer_length) __chk_fail();
  const socklen_t capacity = capacity_of(address_length);
  return shown(
      thread_calls::recvfrom(fd, buffer, length, flags, address, address_length, VERBFAULT_CALLER),
      address, capacity, address_length);
}

}  // extern "C"

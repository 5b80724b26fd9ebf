// The C library's own thread, sleep and clock functions, found once with
// dlvsym (RTLD_NEXT): the front door exports the same names, so the
// harness reaches the real ones only through here.
#pragma once

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

namespace verbfault::interposer::libc {

struct Functions {
  int (*mutex_lock)(pthread_mutex_t*);
  int (*mutex_trylock)(pthread_mutex_t*);
  int (*mutex_unlock)(pthread_mutex_t*);
  int (*mutex_timedlock)(pthread_mutex_t*, const timespec*);
  int (*mutex_clocklock)(pthread_mutex_t*, clockid_t, const timespec*);
  int (*spin_lock)(pthread_spinlock_t*);
  int (*spin_trylock)(pthread_spinlock_t*);
  int (*cond_wait)(pthread_cond_t*, pthread_mutex_t*);
  int (*cond_timedwait)(pthread_cond_t*, pthread_mutex_t*, const timespec*);
  int (*cond_signal)(pthread_cond_t*);
  int (*cond_broadcast)(pthread_cond_t*);
  int (*cond_clockwait)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
  int (*rwlock_rdlock)(pthread_rwlock_t*);
  int (*rwlock_wrlock)(pthread_rwlock_t*);
  int (*rwlock_tryrdlock)(pthread_rwlock_t*);
  int (*rwlock_trywrlock)(pthread_rwlock_t*);
  int (*rwlock_unlock)(pthread_rwlock_t*);
  int (*rwlock_timedrdlock)(pthread_rwlock_t*, const timespec*);
  int (*rwlock_timedwrlock)(pthread_rwlock_t*, const timespec*);
  int (*rwlock_clockrdlock)(pthread_rwlock_t*, clockid_t, const timespec*);
  int (*rwlock_clockwrlock)(pthread_rwlock_t*, clockid_t, const timespec*);
  int (*sem_wait)(sem_t*);
  int (*sem_trywait)(sem_t*);
  int (*sem_timedwait)(sem_t*, const timespec*);
  int (*sem_clockwait)(sem_t*, clockid_t, const timespec*);
  int (*sem_post)(sem_t*);
  int (*poll)(pollfd*, nfds_t, int);
  int (*ppoll)(pollfd*, nfds_t, const timespec*, const sigset_t*);
  int (*epoll_wait)(int, epoll_event*, int, int);
  int (*epoll_pwait)(int, epoll_event*, int, int, const sigset_t*);
  int (*epoll_pwait2)(int, epoll_event*, int, const timespec*, const sigset_t*);
  int (*select)(int, fd_set*, fd_set*, fd_set*, timeval*);
  int (*pselect)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*);
  ssize_t (*read)(int, void*, size_t);
  ssize_t (*write)(int, const void*, size_t);
  int (*close)(int);
  int (*accept4)(int, sockaddr*, socklen_t*, int);
  ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*, socklen_t*);
  ssize_t (*recvmsg)(int, msghdr*, int);
  int (*create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  int (*join)(pthread_t, void**);
  void (*exit)(void*);  // pthread_exit: never returns (clang takes no [[noreturn]] here)
  int (*sched_yield)();
  int (*nanosleep)(const timespec*, timespec*);
  int (*clock_nanosleep)(clockid_t, int, const timespec*, timespec*);
  int (*usleep)(useconds_t);
  unsigned (*sleep)(unsigned);
  int (*clock_gettime)(clockid_t, timespec*);
  int (*gettimeofday)(timeval*, void*);
  time_t (*time)(time_t*);
};

// The C library's `name` at `version`, the definition after libverbfault's
// own (dlvsym RTLD_NEXT); a C library without it ends the process with
// one line: nothing of the harness can work then.
void* next_definition(const char* name, const char* version);
// next_definition into a function pointer of its type.
template <class Fn>
void find(Fn& fn, const char* name, const char* version) {
  fn = reinterpret_cast<Fn>(next_definition(name, version));
}

// The C library's functions, resolved on first use (a constructor of
// another library may lock a mutex before ours ran); never changes after.
const Functions& direct();

#if defined(__SANITIZE_THREAD__)
// Under ThreadSanitizer the synchronization functions are TSan's
// interceptors (libc.cpp); `for_caller` is direct() for a call from the
// TSan runtime itself.
const Functions& real();
const Functions& for_caller(const void* caller);
#else
inline const Functions& real() {
  return direct();
}
inline const Functions& for_caller(const void*) {
  return direct();
}
#endif

}  // namespace verbfault::interposer::libc

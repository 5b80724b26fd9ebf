// The C library's own thread, sleep and clock functions, found once with
// dlvsym (RTLD_NEXT): the front door exports the same names, so the
// harness reaches the real ones only through here.
#pragma once

#include <pthread.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

namespace verbfault::interposer::libc {

struct Functions {
  int (*mutex_lock)(pthread_mutex_t*);
  int (*mutex_trylock)(pthread_mutex_t*);
  int (*mutex_unlock)(pthread_mutex_t*);
  int (*cond_wait)(pthread_cond_t*, pthread_mutex_t*);
  int (*cond_timedwait)(pthread_cond_t*, pthread_mutex_t*, const timespec*);
  int (*cond_signal)(pthread_cond_t*);
  int (*cond_broadcast)(pthread_cond_t*);
  int (*create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  int (*join)(pthread_t, void**);
  [[noreturn]] void (*exit)(void*);
  int (*sched_yield)();
  int (*nanosleep)(const timespec*, timespec*);
  int (*clock_nanosleep)(clockid_t, int, const timespec*, timespec*);
  int (*usleep)(useconds_t);
  unsigned (*sleep)(unsigned);
  int (*clock_gettime)(clockid_t, timespec*);
  int (*gettimeofday)(timeval*, void*);
  time_t (*time)(time_t*);
};

// Resolved on first use (a constructor of another library may lock a
// mutex before ours ran); never changes after.
const Functions& real();

}  // namespace verbfault::interposer::libc

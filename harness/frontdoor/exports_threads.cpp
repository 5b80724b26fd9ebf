// Exported thread, sleep and clock calls of the C library: each forwards
// to the interposer (interposer/thread_calls.h) with its caller's address,
// so that only the program's own calls are scheduling points. They carry
// glibc's symbol versions (libibverbs.map): a program built against glibc
// binds to them when libverbfault.so is preloaded or linked first. Where
// glibc 2.34 moved a function into libc under a new version, the old one
// is exported too.
#include "thread_calls.h"

#include <sched.h>
#include <unistd.h>

using namespace verbfault::interposer;

#define VERBFAULT_CALLER __builtin_return_address(0)

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

}  // extern "C"

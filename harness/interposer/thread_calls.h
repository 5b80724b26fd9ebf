// The program's thread, sleep and clock calls (the front door's pthread_*,
// sched_yield, sleeps and clocks forward here). While the scheduler runs
// (observers/scheduler), a call of a scheduled thread from the program's
// own code is a scheduling point, its waits are modelled there, and its
// clocks read virtual time; every other call is the C library's own.
#pragma once

#include "scheduler.h"

#include <pthread.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

namespace verbfault::interposer::thread_calls {

// Starts the scheduler (the State's constructor, when VERBFAULT_THREADS
// asks for it): the calling thread is thread 0.
void start(const scheduler::Options& options);
// A verbs call of the program: a scheduling point. `yielding`: the
// thread's previous call made no progress (an empty poll).
void verbs_point();
// After a poll: whether it was empty (the thread's next point yields).
void polled(bool empty);
// Before a verbs call reads `fd` and blocks while it is empty
// (ibv_get_cq_event, ibv_get_async_event): a scheduled thread waits in
// the scheduler, not in the kernel. True when the read will not block (or
// the thread is not scheduled, or the fd is non-blocking); false when the
// wait ended for completions the harness held back (release them, check,
// and wait again).
bool wait_readable(int fd, const char* call);

int mutex_lock(pthread_mutex_t* mutex, const void* caller);
int mutex_trylock(pthread_mutex_t* mutex, const void* caller);
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

// Whether the calling thread is scheduled and the call comes from the
// program: the calls that are scheduling points.
bool scheduled(const void* caller);

}  // namespace verbfault::interposer::thread_calls

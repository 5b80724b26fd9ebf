#include "libc.h"

#include "callers.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace verbfault::interposer::libc {

void* next_definition(const char* name, const char* version) {
  void* symbol = dlvsym(RTLD_NEXT, name, version);
  if (symbol == nullptr) {
    std::fprintf(stderr, "verbfault: cannot find the C library's %s@%s\n", name, version);
    std::abort();
  }
  return symbol;
}

namespace {

#if defined(__SANITIZE_THREAD__)
// A ThreadSanitizer build (VERBFAULT_TSAN). TSan learns of a lock, a
// condition variable, a semaphore or a thread only through its
// interceptors (libtsan's pthread_mutex_lock, ...). Calls that reach our
// exports (the program's, when libverbfault.so is preloaded ahead of
// libtsan; libverbfault's own, which bind to its exports) would go around
// TSan through the C library's functions found above: TSan would then
// report every access those locks guard as a race, and a thread created
// behind its back crashes in its first instrumented function. So real()'s
// synchronization functions are TSan's interceptors (exported as
// __interceptor_NAME), which call the C library's. TSan's interceptors in
// turn find the functions they wrap with dlsym(RTLD_NEXT) from libtsan:
// in a program linked with -fsanitize=thread and libverbfault.so (libtsan
// first) that is our export again, and such a call (its caller is in
// libtsan, callers.h) takes direct(), the C library's, or it would loop.
// The clocks, sleeps and fd waits stay the C library's in both tables.
template <class Fn>
void intercepted(Fn& fn, const char* name) {
  char interceptor[64];
  std::snprintf(interceptor, sizeof interceptor, "__interceptor_%s", name);
  if (void* symbol = dlsym(RTLD_DEFAULT, interceptor)) fn = reinterpret_cast<Fn>(symbol);
}

void through_tsan(Functions& f) {
  intercepted(f.mutex_lock, "pthread_mutex_lock");
  intercepted(f.mutex_trylock, "pthread_mutex_trylock");
  intercepted(f.mutex_unlock, "pthread_mutex_unlock");
  intercepted(f.mutex_timedlock, "pthread_mutex_timedlock");
  intercepted(f.spin_lock, "pthread_spin_lock");
  intercepted(f.spin_trylock, "pthread_spin_trylock");
  intercepted(f.cond_wait, "pthread_cond_wait");
  intercepted(f.cond_timedwait, "pthread_cond_timedwait");
  intercepted(f.cond_signal, "pthread_cond_signal");
  intercepted(f.cond_broadcast, "pthread_cond_broadcast");
  intercepted(f.cond_clockwait, "pthread_cond_clockwait");
  intercepted(f.rwlock_rdlock, "pthread_rwlock_rdlock");
  intercepted(f.rwlock_wrlock, "pthread_rwlock_wrlock");
  intercepted(f.rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
  intercepted(f.rwlock_trywrlock, "pthread_rwlock_trywrlock");
  intercepted(f.rwlock_unlock, "pthread_rwlock_unlock");
  intercepted(f.rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
  intercepted(f.rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
  intercepted(f.sem_wait, "sem_wait");
  intercepted(f.sem_trywait, "sem_trywait");
  intercepted(f.sem_timedwait, "sem_timedwait");
  intercepted(f.sem_post, "sem_post");
  intercepted(f.create, "pthread_create");
  intercepted(f.join, "pthread_join");
  intercepted(f.exit, "pthread_exit");
  // Descriptors: TSan keeps a shadow of each number (the file's creator, its
  // close). A close or accept4 it never saw leaves the number's earlier
  // file in the shadow, and the next thread to use the number "races" with
  // that file's creator (the wire's service thread adding an accepted
  // connection to its epoll set against an eventfd the main thread had made
  // and closed under the same number). Both exports pass their caller to
  // for_caller(), so TSan's call back into them takes direct().
  intercepted(f.close, "close");
  intercepted(f.accept4, "accept4");
}
#endif

Functions resolve() {
  Functions f{};
  // The versions a program built on Debian 12 (glibc 2.36) binds to.
  find(f.mutex_lock, "pthread_mutex_lock", "GLIBC_2.2.5");
  find(f.mutex_trylock, "pthread_mutex_trylock", "GLIBC_2.34");
  find(f.mutex_unlock, "pthread_mutex_unlock", "GLIBC_2.2.5");
  find(f.mutex_timedlock, "pthread_mutex_timedlock", "GLIBC_2.34");
  find(f.mutex_clocklock, "pthread_mutex_clocklock", "GLIBC_2.34");
  find(f.spin_lock, "pthread_spin_lock", "GLIBC_2.34");
  find(f.spin_trylock, "pthread_spin_trylock", "GLIBC_2.34");
  find(f.cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
  find(f.cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
  find(f.cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
  find(f.cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
  find(f.cond_clockwait, "pthread_cond_clockwait", "GLIBC_2.34");
  find(f.rwlock_rdlock, "pthread_rwlock_rdlock", "GLIBC_2.34");
  find(f.rwlock_wrlock, "pthread_rwlock_wrlock", "GLIBC_2.34");
  find(f.rwlock_tryrdlock, "pthread_rwlock_tryrdlock", "GLIBC_2.34");
  find(f.rwlock_trywrlock, "pthread_rwlock_trywrlock", "GLIBC_2.34");
  find(f.rwlock_unlock, "pthread_rwlock_unlock", "GLIBC_2.34");
  find(f.rwlock_timedrdlock, "pthread_rwlock_timedrdlock", "GLIBC_2.34");
  find(f.rwlock_timedwrlock, "pthread_rwlock_timedwrlock", "GLIBC_2.34");
  find(f.rwlock_clockrdlock, "pthread_rwlock_clockrdlock", "GLIBC_2.34");
  find(f.rwlock_clockwrlock, "pthread_rwlock_clockwrlock", "GLIBC_2.34");
  find(f.sem_wait, "sem_wait", "GLIBC_2.34");
  find(f.sem_trywait, "sem_trywait", "GLIBC_2.34");
  find(f.sem_timedwait, "sem_timedwait", "GLIBC_2.34");
  find(f.sem_clockwait, "sem_clockwait", "GLIBC_2.34");
  find(f.sem_post, "sem_post", "GLIBC_2.34");
  find(f.poll, "poll", "GLIBC_2.2.5");
  find(f.ppoll, "ppoll", "GLIBC_2.4");
  find(f.epoll_wait, "epoll_wait", "GLIBC_2.3.2");
  find(f.epoll_pwait, "epoll_pwait", "GLIBC_2.6");
  find(f.epoll_pwait2, "epoll_pwait2", "GLIBC_2.35");
  find(f.select, "select", "GLIBC_2.2.5");
  find(f.pselect, "pselect", "GLIBC_2.2.5");
  find(f.read, "read", "GLIBC_2.2.5");
  find(f.write, "write", "GLIBC_2.2.5");
  find(f.close, "close", "GLIBC_2.2.5");
  find(f.accept4, "accept4", "GLIBC_2.10");
  find(f.recvfrom, "recvfrom", "GLIBC_2.2.5");
  find(f.recvmsg, "recvmsg", "GLIBC_2.2.5");
  find(f.create, "pthread_create", "GLIBC_2.34");
  find(f.join, "pthread_join", "GLIBC_2.34");
  find(f.exit, "pthread_exit", "GLIBC_2.2.5");
  find(f.sched_yield, "sched_yield", "GLIBC_2.2.5");
  find(f.nanosleep, "nanosleep", "GLIBC_2.2.5");
  find(f.clock_nanosleep, "clock_nanosleep", "GLIBC_2.17");
  find(f.usleep, "usleep", "GLIBC_2.2.5");
  find(f.sleep, "sleep", "GLIBC_2.2.5");
  find(f.clock_gettime, "clock_gettime", "GLIBC_2.17");
  find(f.gettimeofday, "gettimeofday", "GLIBC_2.2.5");
  find(f.time, "time", "GLIBC_2.2.5");
  return f;
}

}  // namespace

const Functions& direct() {
  // A function-local static: thread-safe initialization without a mutex
  // of ours (the guard is the C++ runtime's, which calls no pthread_mutex_*).
  static const Functions functions = resolve();
  return functions;
}

#if defined(__SANITIZE_THREAD__)
const Functions& real() {
  static const Functions functions = [] {
    Functions f = direct();
    through_tsan(f);
    return f;
  }();
  return functions;
}

const Functions& for_caller(const void* caller) {
  return called_from_sanitizer(caller) ? direct() : real();
}
#endif

}  // namespace verbfault::interposer::libc

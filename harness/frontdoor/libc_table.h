// The C library's functions the front door exports, one row each: the
// table the exports (exports_threads.cpp, exports_files.cpp,
// exports_network.cpp) and the linker version script's GLIBC_* nodes
// (generate_version_map.cpp) are generated from. Adding an entry point is
// a row here and, unless it only forwards, its body in its exports file.
//
//   X(ret, name, version, older, kind, target, params, args)
//
// version  the glibc symbol version a program built today binds to
//          ("GLIBC_2.34": glibc 2.34 moved the pthread_* functions into
//          libc under a new version).
// older    NONE, or the older version the same function is exported under
//          too (GLIBC_2_2_5 for pthread_create, GLIBC_2_30 for the clock*
//          variants): a program built against an older glibc binds to it.
// kind     CALLER: the body is `return target(args..., caller)`, the
//                  caller's address telling the program's calls from the
//                  libraries' (caller.h);
//          PLAIN:  `return target(args...)`;
//          CUSTOM: the body is written in its exports file (it checks a
//                  _FORTIFY_SOURCE size, takes a variadic mode, or routes
//                  between several interposer functions), with the plain
//                  name: the version script gives it its version.
// params   the function's parameters as glibc declares them; args what is
//          passed to target (constants included: access is faccessat at
//          AT_FDCWD).
#pragma once

// clang-format off

// Thread, sleep, clock and fd-wait calls (interposer/threads/thread_calls.h).
#define VERBFAULT_LIBC_THREADS(X) \
  X(int, pthread_mutex_lock, "GLIBC_2.2.5", NONE, CALLER, thread_calls::mutex_lock, (pthread_mutex_t* mutex), (mutex)) \
  X(int, pthread_mutex_unlock, "GLIBC_2.2.5", NONE, CALLER, thread_calls::mutex_unlock, (pthread_mutex_t* mutex), (mutex)) \
  X(int, pthread_mutex_trylock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::mutex_trylock, (pthread_mutex_t* mutex), (mutex)) \
  X(int, pthread_spin_lock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::spin_lock, (pthread_spinlock_t* lock), (lock)) \
  X(int, pthread_spin_trylock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::spin_trylock, (pthread_spinlock_t* lock), (lock)) \
  /* Only the condition variables of glibc 2.3.2 and later: the 2.2.5 ones \
     have another layout, and stay glibc's. */ \
  X(int, pthread_cond_wait, "GLIBC_2.3.2", NONE, CALLER, thread_calls::cond_wait, (pthread_cond_t* cond, pthread_mutex_t* mutex), (cond, mutex)) \
  X(int, pthread_cond_timedwait, "GLIBC_2.3.2", NONE, CALLER, thread_calls::cond_timedwait, (pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* abstime), (cond, mutex, abstime)) \
  X(int, pthread_cond_signal, "GLIBC_2.3.2", NONE, CALLER, thread_calls::cond_signal, (pthread_cond_t* cond), (cond)) \
  X(int, pthread_cond_broadcast, "GLIBC_2.3.2", NONE, CALLER, thread_calls::cond_broadcast, (pthread_cond_t* cond), (cond)) \
  X(int, pthread_create, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::create, (pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg), (thread, attr, start, arg)) \
  X(int, pthread_join, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::join, (pthread_t thread, void** result), (thread, result)) \
  X(void, pthread_exit, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, sched_yield, "GLIBC_2.2.5", NONE, CALLER, thread_calls::sched_yield, (), ()) \
  X(int, nanosleep, "GLIBC_2.2.5", NONE, CALLER, thread_calls::nanosleep, (const timespec* request, timespec* remaining), (request, remaining)) \
  X(int, clock_nanosleep, "GLIBC_2.17", GLIBC_2_2_5, CALLER, thread_calls::clock_nanosleep, (clockid_t clock, int flags, const timespec* request, timespec* remaining), (clock, flags, request, remaining)) \
  X(int, usleep, "GLIBC_2.2.5", NONE, CALLER, thread_calls::usleep, (useconds_t microseconds), (microseconds)) \
  X(unsigned, sleep, "GLIBC_2.2.5", NONE, CALLER, thread_calls::sleep, (unsigned seconds), (seconds)) \
  X(int, clock_gettime, "GLIBC_2.17", GLIBC_2_2_5, CALLER, thread_calls::clock_gettime, (clockid_t clock, timespec* now), (clock, now)) \
  X(int, gettimeofday, "GLIBC_2.2.5", NONE, CALLER, thread_calls::gettimeofday, (timeval* now, void* zone), (now, zone)) \
  X(time_t, time, "GLIBC_2.2.5", NONE, CALLER, thread_calls::time, (time_t* now), (now)) \
  X(int, pthread_mutex_timedlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::mutex_timedlock, (pthread_mutex_t* mutex, const timespec* abstime), (mutex, abstime)) \
  X(int, pthread_mutex_clocklock, "GLIBC_2.34", GLIBC_2_30, CALLER, thread_calls::mutex_clocklock, (pthread_mutex_t* mutex, clockid_t clock, const timespec* abstime), (mutex, clock, abstime)) \
  X(int, pthread_cond_clockwait, "GLIBC_2.34", GLIBC_2_30, CALLER, thread_calls::cond_clockwait, (pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock, const timespec* abstime), (cond, mutex, clock, abstime)) \
  X(int, pthread_rwlock_rdlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::rwlock_rdlock, (pthread_rwlock_t* rwlock), (rwlock)) \
  X(int, pthread_rwlock_wrlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::rwlock_wrlock, (pthread_rwlock_t* rwlock), (rwlock)) \
  X(int, pthread_rwlock_tryrdlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::rwlock_tryrdlock, (pthread_rwlock_t* rwlock), (rwlock)) \
  X(int, pthread_rwlock_trywrlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::rwlock_trywrlock, (pthread_rwlock_t* rwlock), (rwlock)) \
  X(int, pthread_rwlock_timedrdlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::rwlock_timedrdlock, (pthread_rwlock_t* rwlock, const timespec* abstime), (rwlock, abstime)) \
  X(int, pthread_rwlock_timedwrlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::rwlock_timedwrlock, (pthread_rwlock_t* rwlock, const timespec* abstime), (rwlock, abstime)) \
  X(int, pthread_rwlock_clockrdlock, "GLIBC_2.34", GLIBC_2_30, CALLER, thread_calls::rwlock_clockrdlock, (pthread_rwlock_t* rwlock, clockid_t clock, const timespec* abstime), (rwlock, clock, abstime)) \
  X(int, pthread_rwlock_clockwrlock, "GLIBC_2.34", GLIBC_2_30, CALLER, thread_calls::rwlock_clockwrlock, (pthread_rwlock_t* rwlock, clockid_t clock, const timespec* abstime), (rwlock, clock, abstime)) \
  X(int, pthread_rwlock_unlock, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::rwlock_unlock, (pthread_rwlock_t* rwlock), (rwlock)) \
  X(int, sem_wait, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::sem_wait, (sem_t* sem), (sem)) \
  X(int, sem_trywait, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::sem_trywait, (sem_t* sem), (sem)) \
  X(int, sem_timedwait, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::sem_timedwait, (sem_t* sem, const timespec* abstime), (sem, abstime)) \
  X(int, sem_clockwait, "GLIBC_2.34", GLIBC_2_30, CALLER, thread_calls::sem_clockwait, (sem_t* sem, clockid_t clock, const timespec* abstime), (sem, clock, abstime)) \
  X(int, sem_post, "GLIBC_2.34", GLIBC_2_2_5, CALLER, thread_calls::sem_post, (sem_t* sem), (sem)) \
  X(int, poll, "GLIBC_2.2.5", NONE, CALLER, thread_calls::poll, (pollfd* fds, nfds_t n, int timeout), (fds, n, timeout)) \
  X(int, ppoll, "GLIBC_2.4", NONE, CALLER, thread_calls::ppoll, (pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* sigmask), (fds, n, timeout, sigmask)) \
  X(int, epoll_wait, "GLIBC_2.3.2", NONE, CALLER, thread_calls::epoll_wait, (int epfd, epoll_event* events, int max_events, int timeout), (epfd, events, max_events, timeout)) \
  X(int, epoll_pwait, "GLIBC_2.6", NONE, CALLER, thread_calls::epoll_pwait, (int epfd, epoll_event* events, int max_events, int timeout, const sigset_t* sigmask), (epfd, events, max_events, timeout, sigmask)) \
  X(int, epoll_pwait2, "GLIBC_2.35", NONE, CALLER, thread_calls::epoll_pwait2, (int epfd, epoll_event* events, int max_events, const timespec* timeout, const sigset_t* sigmask), (epfd, events, max_events, timeout, sigmask)) \
  X(int, select, "GLIBC_2.2.5", NONE, CALLER, thread_calls::select, (int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, timeval* timeout), (nfds, readfds, writefds, exceptfds, timeout)) \
  X(int, pselect, "GLIBC_2.2.5", NONE, CALLER, thread_calls::pselect, (int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, const timespec* timeout, const sigset_t* sigmask), (nfds, readfds, writefds, exceptfds, timeout, sigmask)) \
  X(ssize_t, read, "GLIBC_2.2.5", NONE, CALLER, thread_calls::read, (int fd, void* buffer, size_t count), (fd, buffer, count)) \
  X(int, accept, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, accept4, "GLIBC_2.10", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, recv, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, recvfrom, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, recvmsg, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, __poll_chk, "GLIBC_2.16", NONE, CUSTOM, _, (), ()) \
  X(int, __ppoll_chk, "GLIBC_2.16", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, __read_chk, "GLIBC_2.4", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, __recv_chk, "GLIBC_2.4", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, __recvfrom_chk, "GLIBC_2.4", NONE, CUSTOM, _, (), ())


// File calls: the simulated devices in sysfs and /dev
// (interposer/system_files.h, interposer/cm_files.h).
#define VERBFAULT_LIBC_FILES(X) \
  X(int, open, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, open64, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, openat, "GLIBC_2.4", NONE, CUSTOM, _, (), ()) \
  X(int, openat64, "GLIBC_2.4", NONE, CUSTOM, _, (), ()) \
  /* _FORTIFY_SOURCE's open with flags known only at run time: no mode \
     (the fortified open insists there is none when O_CREAT is set). */ \
  X(int, __open_2, "GLIBC_2.7", NONE, CALLER, system_files::openat, (const char* path, int flags), (AT_FDCWD, path, flags, 0)) \
  X(int, __open64_2, "GLIBC_2.7", NONE, CALLER, system_files::openat, (const char* path, int flags), (AT_FDCWD, path, flags | O_LARGEFILE, 0)) \
  X(int, __openat_2, "GLIBC_2.7", NONE, CALLER, system_files::openat, (int dirfd, const char* path, int flags), (dirfd, path, flags, 0)) \
  X(int, __openat64_2, "GLIBC_2.7", NONE, CALLER, system_files::openat, (int dirfd, const char* path, int flags), (dirfd, path, flags | O_LARGEFILE, 0)) \
  X(FILE*, fopen, "GLIBC_2.2.5", NONE, CALLER, system_files::fopen, (const char* path, const char* mode), (path, mode, false)) \
  X(FILE*, fopen64, "GLIBC_2.2.5", NONE, CALLER, system_files::fopen, (const char* path, const char* mode), (path, mode, true)) \
  /* A CM file of the simulated connection manager, or the C library's. */ \
  X(ssize_t, write, "GLIBC_2.2.5", NONE, PLAIN, cm_files::write, (int fd, const void* buffer, size_t length), (fd, buffer, length)) \
  X(int, close, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, fstat, "GLIBC_2.33", NONE, CUSTOM, _, (), ()) \
  X(int, fstat64, "GLIBC_2.33", NONE, CUSTOM, _, (), ()) \
  X(int, __fxstat, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, __fxstat64, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, stat, "GLIBC_2.33", NONE, CALLER, system_files::fstatat, (const char* path, struct stat* out), (AT_FDCWD, path, out, 0)) \
  X(int, stat64, "GLIBC_2.33", NONE, CALLER, system_files::fstatat, (const char* path, struct stat64* out), (AT_FDCWD, path, reinterpret_cast<struct stat*>(out), 0)) \
  X(int, lstat, "GLIBC_2.33", NONE, CALLER, system_files::fstatat, (const char* path, struct stat* out), (AT_FDCWD, path, out, AT_SYMLINK_NOFOLLOW)) \
  X(int, lstat64, "GLIBC_2.33", NONE, CALLER, system_files::fstatat, (const char* path, struct stat64* out), (AT_FDCWD, path, reinterpret_cast<struct stat*>(out), AT_SYMLINK_NOFOLLOW)) \
  X(int, fstatat, "GLIBC_2.33", NONE, CALLER, system_files::fstatat, (int dirfd, const char* path, struct stat* out, int flags), (dirfd, path, out, flags)) \
  X(int, fstatat64, "GLIBC_2.33", NONE, CALLER, system_files::fstatat, (int dirfd, const char* path, struct stat64* out, int flags), (dirfd, path, reinterpret_cast<struct stat*>(out), flags)) \
  X(int, __xstat, "GLIBC_2.2.5", NONE, CALLER, system_files::fstatat, (int, const char* path, struct stat* out), (AT_FDCWD, path, out, 0)) \
  X(int, __xstat64, "GLIBC_2.2.5", NONE, CALLER, system_files::fstatat, (int, const char* path, struct stat64* out), (AT_FDCWD, path, reinterpret_cast<struct stat*>(out), 0)) \
  X(int, __lxstat, "GLIBC_2.2.5", NONE, CALLER, system_files::fstatat, (int, const char* path, struct stat* out), (AT_FDCWD, path, out, AT_SYMLINK_NOFOLLOW)) \
  X(int, __lxstat64, "GLIBC_2.2.5", NONE, CALLER, system_files::fstatat, (int, const char* path, struct stat64* out), (AT_FDCWD, path, reinterpret_cast<struct stat*>(out), AT_SYMLINK_NOFOLLOW)) \
  X(int, __fxstatat, "GLIBC_2.4", NONE, CALLER, system_files::fstatat, (int, int dirfd, const char* path, struct stat* out, int flags), (dirfd, path, out, flags)) \
  X(int, __fxstatat64, "GLIBC_2.4", NONE, CALLER, system_files::fstatat, (int, int dirfd, const char* path, struct stat64* out, int flags), (dirfd, path, reinterpret_cast<struct stat*>(out), flags)) \
  X(int, statx, "GLIBC_2.28", NONE, CALLER, system_files::statx, (int dirfd, const char* path, int flags, unsigned mask, struct statx* out), (dirfd, path, flags, mask, out)) \
  X(int, access, "GLIBC_2.2.5", NONE, CALLER, system_files::faccessat, (const char* path, int mode), (AT_FDCWD, path, mode, 0)) \
  X(int, faccessat, "GLIBC_2.4", NONE, CALLER, system_files::faccessat, (int dirfd, const char* path, int mode, int flags), (dirfd, path, mode, flags)) \
  X(int, euidaccess, "GLIBC_2.2.5", NONE, CALLER, system_files::faccessat, (const char* path, int mode), (AT_FDCWD, path, mode, AT_EACCESS)) \
  X(int, eaccess, "GLIBC_2.4", NONE, CALLER, system_files::faccessat, (const char* path, int mode), (AT_FDCWD, path, mode, AT_EACCESS)) \
  X(ssize_t, readlink, "GLIBC_2.2.5", NONE, CALLER, system_files::readlinkat, (const char* path, char* buffer, size_t size), (AT_FDCWD, path, buffer, size)) \
  X(ssize_t, readlinkat, "GLIBC_2.4", NONE, CALLER, system_files::readlinkat, (int dirfd, const char* path, char* buffer, size_t size), (dirfd, path, buffer, size)) \
  X(ssize_t, __readlink_chk, "GLIBC_2.4", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, __readlinkat_chk, "GLIBC_2.5", NONE, CUSTOM, _, (), ()) \
  X(char*, realpath, "GLIBC_2.3", NONE, CALLER, system_files::realpath, (const char* path, char* resolved), (path, resolved)) \
  X(char*, __realpath_chk, "GLIBC_2.4", NONE, CUSTOM, _, (), ()) \
  X(char*, canonicalize_file_name, "GLIBC_2.2.5", NONE, CALLER, system_files::realpath, (const char* path), (path, nullptr)) \
  X(ssize_t, getxattr, "GLIBC_2.3", NONE, CALLER, system_files::getxattr, (const char* path, const char* name, void* value, size_t size), (path, name, value, size, true)) \
  X(ssize_t, lgetxattr, "GLIBC_2.3", NONE, CALLER, system_files::getxattr, (const char* path, const char* name, void* value, size_t size), (path, name, value, size, false)) \
  X(ssize_t, listxattr, "GLIBC_2.3", NONE, CALLER, system_files::listxattr, (const char* path, char* list, size_t size), (path, list, size, true)) \
  X(ssize_t, llistxattr, "GLIBC_2.3", NONE, CALLER, system_files::listxattr, (const char* path, char* list, size_t size), (path, list, size, false)) \
  X(DIR*, opendir, "GLIBC_2.2.5", NONE, CALLER, system_files::opendir, (const char* path), (path)) \
  X(DIR*, fdopendir, "GLIBC_2.4", NONE, PLAIN, system_files::fdopendir, (int fd), (fd)) \
  X(struct dirent*, readdir, "GLIBC_2.2.5", NONE, PLAIN, system_files::readdir, (DIR* dir), (dir)) \
  X(struct dirent64*, readdir64, "GLIBC_2.2.5", NONE, PLAIN, system_files::readdir64, (DIR* dir), (dir)) \
  X(int, readdir_r, "GLIBC_2.2.5", NONE, PLAIN, system_files::readdir_r, (DIR* dir, struct dirent* entry, struct dirent** result), (dir, entry, result)) \
  X(int, readdir64_r, "GLIBC_2.2.5", NONE, PLAIN, system_files::readdir64_r, (DIR* dir, struct dirent64* entry, struct dirent64** result), (dir, entry, result)) \
  X(int, closedir, "GLIBC_2.2.5", NONE, PLAIN, system_files::closedir, (DIR* dir), (dir)) \
  X(int, dirfd, "GLIBC_2.2.5", NONE, PLAIN, system_files::dirfd, (DIR* dir), (dir)) \
  X(void, rewinddir, "GLIBC_2.2.5", NONE, PLAIN, system_files::rewinddir, (DIR* dir), (dir)) \
  X(long, telldir, "GLIBC_2.2.5", NONE, PLAIN, system_files::telldir, (DIR* dir), (dir)) \
  X(void, seekdir, "GLIBC_2.2.5", NONE, PLAIN, system_files::seekdir, (DIR* dir, long position), (dir, position)) \
  X(int, scandir, "GLIBC_2.2.5", NONE, CALLER, system_files::scandirat, (const char* path, struct dirent*** list, int (*filter)(const struct dirent*), int (*compare)(const struct dirent**, const struct dirent**)), (AT_FDCWD, path, list, filter, compare)) \
  X(int, scandir64, "GLIBC_2.2.5", NONE, CALLER, system_files::scandirat64, (const char* path, struct dirent64*** list, int (*filter)(const struct dirent64*), int (*compare)(const struct dirent64**, const struct dirent64**)), (AT_FDCWD, path, list, filter, compare)) \
  X(int, scandirat, "GLIBC_2.15", NONE, CALLER, system_files::scandirat, (int dirfd, const char* path, struct dirent*** list, int (*filter)(const struct dirent*), int (*compare)(const struct dirent**, const struct dirent**)), (dirfd, path, list, filter, compare)) \
  X(int, scandirat64, "GLIBC_2.15", NONE, CALLER, system_files::scandirat64, (int dirfd, const char* path, struct dirent64*** list, int (*filter)(const struct dirent64*), int (*compare)(const struct dirent64**, const struct dirent64**)), (dirfd, path, list, filter, compare)) \
  X(int, chdir, "GLIBC_2.2.5", NONE, CALLER, system_files::chdir, (const char* path), (path)) \
  X(int, fchdir, "GLIBC_2.2.5", NONE, PLAIN, system_files::fchdir, (int fd), (fd)) \
  X(char*, getcwd, "GLIBC_2.2.5", NONE, PLAIN, system_files::getcwd, (char* buffer, size_t size), (buffer, size)) \
  X(char*, __getcwd_chk, "GLIBC_2.4", NONE, CUSTOM, _, (), ()) \
  X(char*, get_current_dir_name, "GLIBC_2.2.5", NONE, PLAIN, system_files::get_current_dir_name, (), ())


// Network calls: the simulated ports' IP interfaces and the sockets on
// their addresses (interposer/network_interfaces.h, socket_addresses.h).
#define VERBFAULT_LIBC_NETWORK(X) \
  X(int, getifaddrs, "GLIBC_2.3", NONE, CALLER, network_interfaces::getifaddrs, (ifaddrs** list), (list)) \
  X(void, freeifaddrs, "GLIBC_2.3", NONE, PLAIN, network_interfaces::freeifaddrs, (ifaddrs* list), (list)) \
  X(unsigned, if_nametoindex, "GLIBC_2.2.5", NONE, PLAIN, network_interfaces::if_nametoindex, (const char* name), (name)) \
  X(char*, if_indextoname, "GLIBC_2.2.5", NONE, PLAIN, network_interfaces::if_indextoname, (unsigned index, char* name), (index, name)) \
  X(int, ioctl, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(int, bind, "GLIBC_2.2.5", NONE, PLAIN, socket_addresses::bind, (int fd, const sockaddr* address, socklen_t length), (fd, address, length)) \
  X(int, connect, "GLIBC_2.2.5", NONE, PLAIN, socket_addresses::connect, (int fd, const sockaddr* address, socklen_t length), (fd, address, length)) \
  X(int, getsockname, "GLIBC_2.2.5", NONE, PLAIN, socket_addresses::getsockname, (int fd, sockaddr* address, socklen_t* length), (fd, address, length)) \
  X(int, getpeername, "GLIBC_2.2.5", NONE, PLAIN, socket_addresses::getpeername, (int fd, sockaddr* address, socklen_t* length), (fd, address, length)) \
  X(int, socket, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, send, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, sendto, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ()) \
  X(ssize_t, sendmsg, "GLIBC_2.2.5", NONE, CUSTOM, _, (), ())

// clang-format on

#define VERBFAULT_LIBC_CALLS(X) \
  VERBFAULT_LIBC_THREADS(X) VERBFAULT_LIBC_FILES(X) VERBFAULT_LIBC_NETWORK(X)

// The older versions a row may name, as symbol-version strings.
#define VERBFAULT_LIBC_OLDER_VERSION_NONE ""
#define VERBFAULT_LIBC_OLDER_VERSION_GLIBC_2_2_5 "GLIBC_2.2.5"
#define VERBFAULT_LIBC_OLDER_VERSION_GLIBC_2_30 "GLIBC_2.30"
#define VERBFAULT_LIBC_OLDER_VERSION(older) VERBFAULT_LIBC_OLDER_VERSION_##older

// The definition of a row's export (expanded in its exports file, inside
// extern "C"). A row with no older version is defined under its own name:
// the version script gives it its version (and a compiler without the
// symver attribute, clang 14 of the fuzz build, still exports it). A row
// with an older version is a function named verbfault_libc_<name>,
// exported as <name>@@<version> and <name>@<older> (GCC's symver; under
// clang 14 neither, docs/hacking.md "Fuzzing"). Nothing for a CUSTOM row.
#define VERBFAULT_LIBC_HEAD_NONE(ret, name, version, params) ret name params
#define VERBFAULT_LIBC_HEAD_GLIBC_2_2_5(ret, name, version, params)             \
  __attribute__((symver(#name "@@" version), symver(#name "@GLIBC_2.2.5"))) ret \
      verbfault_libc_##name params
#define VERBFAULT_LIBC_HEAD_GLIBC_2_30(ret, name, version, params)             \
  __attribute__((symver(#name "@@" version), symver(#name "@GLIBC_2.30"))) ret \
      verbfault_libc_##name params
#define VERBFAULT_LIBC_WITH_CALLER(...) (__VA_ARGS__ __VA_OPT__(, ) VERBFAULT_CALLER)
#define VERBFAULT_LIBC_DEFINE_CALLER(ret, name, version, older, target, params, args) \
  VERBFAULT_LIBC_HEAD_##older(ret, name, version, params) {                          \
    return target VERBFAULT_LIBC_WITH_CALLER args;                                    \
  }
#define VERBFAULT_LIBC_DEFINE_PLAIN(ret, name, version, older, target, params, args) \
  VERBFAULT_LIBC_HEAD_##older(ret, name, version, params) {                         \
    return target args;                                                             \
  }
#define VERBFAULT_LIBC_DEFINE_CUSTOM(ret, name, version, older, target, params, args)
#define VERBFAULT_LIBC_DEFINE(ret, name, version, older, kind, target, params, args) \
  VERBFAULT_LIBC_DEFINE_##kind(ret, name, version, older, target, params, args)

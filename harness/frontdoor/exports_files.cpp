// Exported file calls of the C library: each forwards to the interposer
// (interposer/system_files.h) with its caller's address, so that a program
// finds the simulated devices in /dev/infiniband and /sys/class/infiniband*
// as it finds a real HCA there. They carry glibc's symbol versions
// (libc_table.h). Every name through which a program reaches one of
// these calls is here: glibc's own functions call each other internally
// (fopen does not call open, scandir not opendir), so each entry point is
// exported itself, the fortified (__*_chk, __open_2) and pre-2.33 stat
// (__xstat) ones included.
#undef _FORTIFY_SOURCE
#include "caller.h"
#include "libc_table.h"
#include "cm_files.h"
#include "route_netlink.h"
#include "system_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

using namespace verbfault::interposer;

namespace {

// open(2): the mode is an argument only when the file may be created.
mode_t mode_argument(int flags, va_list args) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(args, mode_t) : 0;
}

}  // namespace

extern "C" {

VERBFAULT_LIBC_FILES(VERBFAULT_LIBC_DEFINE)

int __fxstat(int, int, struct stat*);
int __fxstat64(int, int, struct stat64*);
ssize_t __readlink_chk(const char*, char*, size_t, size_t);
ssize_t __readlinkat_chk(int, const char*, char*, size_t, size_t);
char* __realpath_chk(const char*, char*, size_t);
char* __getcwd_chk(char*, size_t, size_t);

int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  return system_files::openat(AT_FDCWD, path, flags, mode, VERBFAULT_CALLER);
}

int open64(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  return system_files::openat(AT_FDCWD, path, flags | O_LARGEFILE, mode, VERBFAULT_CALLER);
}

int openat(int dirfd, const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  return system_files::openat(dirfd, path, flags, mode, VERBFAULT_CALLER);
}

int openat64(int dirfd, const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  return system_files::openat(dirfd, path, flags | O_LARGEFILE, mode, VERBFAULT_CALLER);
}

// Descriptor calls: a CM file of the simulated connection manager
// (interposer/cm_files.h) or the C library's. fstat by the system call for
// every other descriptor: glibc's own is a symbol of 2.33 only, and on
// x86-64 the kernel's struct stat is the C library's.
int close(int fd) {
  route_netlink::closed(fd);
  return cm_files::close(fd, VERBFAULT_CALLER);
}

int fstat(int fd, struct stat* out) {
  if (cm_files::fstat(fd, out)) return 0;
  return static_cast<int>(syscall(SYS_fstat, fd, out));
}

int fstat64(int fd, struct stat64* out) {
  return fstat(fd, reinterpret_cast<struct stat*>(out));
}

int __fxstat(int, int fd, struct stat* out) {
  return fstat(fd, out);
}

int __fxstat64(int, int fd, struct stat64* out) {
  return fstat(fd, reinterpret_cast<struct stat*>(out));
}

ssize_t __readlink_chk(const char* path, char* buffer, size_t size, size_t buffer_size) {
  if (size > buffer_size) abort();  // what glibc's check does: __chk_fail
  return system_files::readlinkat(AT_FDCWD, path, buffer, size, VERBFAULT_CALLER);
}

ssize_t __readlinkat_chk(int dirfd, const char* path, char* buffer, size_t size,
                         size_t buffer_size) {
  if (size > buffer_size) abort();
  return system_files::readlinkat(dirfd, path, buffer, size, VERBFAULT_CALLER);
}

char* __realpath_chk(const char* path, char* resolved, size_t resolved_size) {
  if (resolved != nullptr && resolved_size < PATH_MAX) abort();
  return system_files::realpath(path, resolved, VERBFAULT_CALLER);
}

char* __getcwd_chk(char* buffer, size_t size, size_t buffer_size) {
  if (size > buffer_size) abort();
  return system_files::getcwd(buffer, size);
}

}  // extern "C"

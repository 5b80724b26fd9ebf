// Exported file calls of the C library: each forwards to the interposer
// (interposer/system_files.h) with its caller's address, so that a program
// finds the simulated devices in /dev/infiniband and /sys/class/infiniband*
// as it finds a real HCA there. They carry glibc's symbol versions
// (libibverbs.map.in). Every name through which a program reaches one of
// these calls is here: glibc's own functions call each other internally
// (fopen does not call open, scandir not opendir), so each entry point is
// exported itself, the fortified (__*_chk, __open_2) and pre-2.33 stat
// (__xstat) ones included.
#undef _FORTIFY_SOURCE
#include "caller.h"
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

// The stat calls glibc exported before 2.33 (a version argument first),
// which binaries built then still call: x86-64's struct stat is the
// kernel's (_STAT_VER 1), as today's.
int __xstat(int, const char*, struct stat*);
int __xstat64(int, const char*, struct stat64*);
int __lxstat(int, const char*, struct stat*);
int __lxstat64(int, const char*, struct stat64*);
int __fxstatat(int, int, const char*, struct stat*, int);
int __fxstat(int, int, struct stat*);
int __fxstat64(int, int, struct stat64*);
int __fxstatat64(int, int, const char*, struct stat64*, int);
int __open_2(const char*, int);
int __open64_2(const char*, int);
int __openat_2(int, const char*, int);
int __openat64_2(int, const char*, int);
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

// _FORTIFY_SOURCE's open with flags known only at run time (no mode: the
// fortified open insists there is none to pass when O_CREAT is set).
int __open_2(const char* path, int flags) {
  return system_files::openat(AT_FDCWD, path, flags, 0, VERBFAULT_CALLER);
}

int __open64_2(const char* path, int flags) {
  return system_files::openat(AT_FDCWD, path, flags | O_LARGEFILE, 0, VERBFAULT_CALLER);
}

int __openat_2(int dirfd, const char* path, int flags) {
  return system_files::openat(dirfd, path, flags, 0, VERBFAULT_CALLER);
}

int __openat64_2(int dirfd, const char* path, int flags) {
  return system_files::openat(dirfd, path, flags | O_LARGEFILE, 0, VERBFAULT_CALLER);
}

FILE* fopen(const char* path, const char* mode) {
  return system_files::fopen(path, mode, false, VERBFAULT_CALLER);
}

FILE* fopen64(const char* path, const char* mode) {
  return system_files::fopen(path, mode, true, VERBFAULT_CALLER);
}

// Descriptor calls: a CM file of the simulated connection manager
// (interposer/cm_files.h) or the C library's. fstat by the system call for
// every other descriptor: glibc's own is a symbol of 2.33 only, and on
// x86-64 the kernel's struct stat is the C library's.
ssize_t write(int fd, const void* buffer, size_t length) {
  return cm_files::write(fd, buffer, length);
}

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

int stat(const char* path, struct stat* out) {
  return system_files::fstatat(AT_FDCWD, path, out, 0, VERBFAULT_CALLER);
}

int stat64(const char* path, struct stat64* out) {
  return system_files::fstatat(AT_FDCWD, path, reinterpret_cast<struct stat*>(out), 0,
                               VERBFAULT_CALLER);
}

int lstat(const char* path, struct stat* out) {
  return system_files::fstatat(AT_FDCWD, path, out, AT_SYMLINK_NOFOLLOW, VERBFAULT_CALLER);
}

int lstat64(const char* path, struct stat64* out) {
  return system_files::fstatat(AT_FDCWD, path, reinterpret_cast<struct stat*>(out),
                               AT_SYMLINK_NOFOLLOW, VERBFAULT_CALLER);
}

int fstatat(int dirfd, const char* path, struct stat* out, int flags) {
  return system_files::fstatat(dirfd, path, out, flags, VERBFAULT_CALLER);
}

int fstatat64(int dirfd, const char* path, struct stat64* out, int flags) {
  return system_files::fstatat(dirfd, path, reinterpret_cast<struct stat*>(out), flags,
                               VERBFAULT_CALLER);
}

int __xstat(int, const char* path, struct stat* out) {
  return system_files::fstatat(AT_FDCWD, path, out, 0, VERBFAULT_CALLER);
}

int __xstat64(int, const char* path, struct stat64* out) {
  return system_files::fstatat(AT_FDCWD, path, reinterpret_cast<struct stat*>(out), 0,
                               VERBFAULT_CALLER);
}

int __lxstat(int, const char* path, struct stat* out) {
  return system_files::fstatat(AT_FDCWD, path, out, AT_SYMLINK_NOFOLLOW, VERBFAULT_CALLER);
}

int __lxstat64(int, const char* path, struct stat64* out) {
  return system_files::fstatat(AT_FDCWD, path, reinterpret_cast<struct stat*>(out),
                               AT_SYMLINK_NOFOLLOW, VERBFAULT_CALLER);
}

int __fxstatat(int, int dirfd, const char* path, struct stat* out, int flags) {
  return system_files::fstatat(dirfd, path, out, flags, VERBFAULT_CALLER);
}

int __fxstatat64(int, int dirfd, const char* path, struct stat64* out, int flags) {
  return system_files::fstatat(dirfd, path, reinterpret_cast<struct stat*>(out), flags,
                               VERBFAULT_CALLER);
}

int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* out) {
  return system_files::statx(dirfd, path, flags, mask, out, VERBFAULT_CALLER);
}

int access(const char* path, int mode) {
  return system_files::faccessat(AT_FDCWD, path, mode, 0, VERBFAULT_CALLER);
}

int faccessat(int dirfd, const char* path, int mode, int flags) {
  return system_files::faccessat(dirfd, path, mode, flags, VERBFAULT_CALLER);
}

int euidaccess(const char* path, int mode) {
  return system_files::faccessat(AT_FDCWD, path, mode, AT_EACCESS, VERBFAULT_CALLER);
}

int eaccess(const char* path, int mode) {
  return system_files::faccessat(AT_FDCWD, path, mode, AT_EACCESS, VERBFAULT_CALLER);
}

ssize_t readlink(const char* path, char* buffer, size_t size) {
  return system_files::readlinkat(AT_FDCWD, path, buffer, size, VERBFAULT_CALLER);
}

ssize_t readlinkat(int dirfd, const char* path, char* buffer, size_t size) {
  return system_files::readlinkat(dirfd, path, buffer, size, VERBFAULT_CALLER);
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

__attribute__((symver("realpath@@GLIBC_2.3"))) char* verbfault_realpath(const char* path,
                                                                        char* resolved) {
  return system_files::realpath(path, resolved, VERBFAULT_CALLER);
}

char* __realpath_chk(const char* path, char* resolved, size_t resolved_size) {
  if (resolved != nullptr && resolved_size < PATH_MAX) abort();
  return system_files::realpath(path, resolved, VERBFAULT_CALLER);
}

char* canonicalize_file_name(const char* path) {
  return system_files::realpath(path, nullptr, VERBFAULT_CALLER);
}

ssize_t getxattr(const char* path, const char* name, void* value, size_t size) {
  return system_files::getxattr(path, name, value, size, true, VERBFAULT_CALLER);
}

ssize_t lgetxattr(const char* path, const char* name, void* value, size_t size) {
  return system_files::getxattr(path, name, value, size, false, VERBFAULT_CALLER);
}

ssize_t listxattr(const char* path, char* list, size_t size) {
  return system_files::listxattr(path, list, size, true, VERBFAULT_CALLER);
}

ssize_t llistxattr(const char* path, char* list, size_t size) {
  return system_files::listxattr(path, list, size, false, VERBFAULT_CALLER);
}

DIR* opendir(const char* path) {
  return system_files::opendir(path, VERBFAULT_CALLER);
}

DIR* fdopendir(int fd) {
  return system_files::fdopendir(fd);
}

struct dirent* readdir(DIR* dir) {
  return system_files::readdir(dir);
}

struct dirent64* readdir64(DIR* dir) {
  return system_files::readdir64(dir);
}

int readdir_r(DIR* dir, struct dirent* entry, struct dirent** result) {
  return system_files::readdir_r(dir, entry, result);
}

int readdir64_r(DIR* dir, struct dirent64* entry, struct dirent64** result) {
  return system_files::readdir64_r(dir, entry, result);
}

int closedir(DIR* dir) {
  return system_files::closedir(dir);
}

int dirfd(DIR* dir) {
  return system_files::dirfd(dir);
}

void rewinddir(DIR* dir) {
  system_files::rewinddir(dir);
}

long telldir(DIR* dir) {
  return system_files::telldir(dir);
}

void seekdir(DIR* dir, long position) {
  system_files::seekdir(dir, position);
}

int scandir(const char* path, struct dirent*** list, int (*filter)(const struct dirent*),
            int (*compare)(const struct dirent**, const struct dirent**)) {
  return system_files::scandirat(AT_FDCWD, path, list, filter, compare, VERBFAULT_CALLER);
}

int scandir64(const char* path, struct dirent64*** list, int (*filter)(const struct dirent64*),
              int (*compare)(const struct dirent64**, const struct dirent64**)) {
  return system_files::scandirat64(AT_FDCWD, path, list, filter, compare, VERBFAULT_CALLER);
}

int scandirat(int dirfd, const char* path, struct dirent*** list,
              int (*filter)(const struct dirent*),
              int (*compare)(const struct dirent**, const struct dirent**)) {
  return system_files::scandirat(dirfd, path, list, filter, compare, VERBFAULT_CALLER);
}

int scandirat64(int dirfd, const char* path, struct dirent64*** list,
                int (*filter)(const struct dirent64*),
                int (*compare)(const struct dirent64**, const struct dirent64**)) {
  return system_files::scandirat64(dirfd, path, list, filter, compare, VERBFAULT_CALLER);
}

int chdir(const char* path) {
  return system_files::chdir(path, VERBFAULT_CALLER);
}

int fchdir(int fd) {
  return system_files::fchdir(fd);
}

char* getcwd(char* buffer, size_t size) {
  return system_files::getcwd(buffer, size);
}

char* __getcwd_chk(char* buffer, size_t size, size_t buffer_size) {
  if (size > buffer_size) abort();
  return system_files::getcwd(buffer, size);
}

char* get_current_dir_name() {
  return system_files::get_current_dir_name();
}

}  // extern "C"

// The C library's own file functions, found once with dlvsym (RTLD_NEXT):
// the front door exports the same names (exports_files.cpp) to show the
// simulated devices in sysfs and /dev, and reaches the real ones only
// through here.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace verbfault::interposer::libc {

struct FileFunctions {
  int (*openat)(int, const char*, int, ...);
  FILE* (*fopen)(const char*, const char*);
  FILE* (*fopen64)(const char*, const char*);
  int (*fstatat)(int, const char*, struct stat*, int);
  int (*statx)(int, const char*, int, unsigned, struct statx*);
  int (*faccessat)(int, const char*, int, int);
  ssize_t (*readlinkat)(int, const char*, char*, size_t);
  char* (*realpath)(const char*, char*);
  ssize_t (*getxattr)(const char*, const char*, void*, size_t);
  ssize_t (*lgetxattr)(const char*, const char*, void*, size_t);
  ssize_t (*listxattr)(const char*, char*, size_t);
  ssize_t (*llistxattr)(const char*, char*, size_t);
  DIR* (*opendir)(const char*);
  DIR* (*fdopendir)(int);
  dirent* (*readdir)(DIR*);
  dirent64* (*readdir64)(DIR*);
  int (*readdir_r)(DIR*, dirent*, dirent**);
  int (*readdir64_r)(DIR*, dirent64*, dirent64**);
  int (*closedir)(DIR*);
  int (*dirfd)(DIR*);
  void (*rewinddir)(DIR*);
  long (*telldir)(DIR*);
  void (*seekdir)(DIR*, long);
  int (*scandirat)(int, const char*, dirent***, int (*)(const dirent*),
                   int (*)(const dirent**, const dirent**));
  int (*scandirat64)(int, const char*, dirent64***, int (*)(const dirent64*),
                     int (*)(const dirent64**, const dirent64**));
  int (*chdir)(const char*);
  int (*fchdir)(int);
  char* (*getcwd)(char*, size_t);
  char* (*get_current_dir_name)();
};

// Resolved on first use; never changes after.
const FileFunctions& files();

}  // namespace verbfault::interposer::libc

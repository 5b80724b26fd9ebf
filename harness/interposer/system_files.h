// The simulated devices as the system shows them: the C library's file
// calls of a program see /dev/infiniband/uverbsN, /sys/class/infiniband/
// <dev>/..., /sys/class/infiniband_verbs/... as the kernel lays them out
// (provider/system_view.h says what each path holds). UCX, Open MPI,
// libibumad (ibstat) and scripts (ibstatus) find RDMA devices there, not
// through libibverbs.
//
// Only those paths are served; every other path goes to the C library
// untouched, and so does every call from libverbfault itself and from
// libibverbs and its providers: the real libibverbs must see the real
// system, or it would look for a kernel driver behind vfsim0. A directory
// that exists for real as well (/sys/class/infiniband on a machine with
// rxe) lists the real entries and the simulated ones.
//
// Each function has the signature and the return convention of the C
// library's function of that name, with the caller's return address last.
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

namespace verbfault::interposer::system_files {

int openat(int dirfd, const char* path, int flags, mode_t mode, const void* caller);
FILE* fopen(const char* path, const char* mode, bool large_file, const void* caller);
int fstatat(int dirfd, const char* path, struct stat* out, int flags, const void* caller);
int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* out,
          const void* caller);
int faccessat(int dirfd, const char* path, int mode, int flags, const void* caller);
ssize_t readlinkat(int dirfd, const char* path, char* buffer, size_t size, const void* caller);
char* realpath(const char* path, char* resolved, const void* caller);
// getxattr / lgetxattr (`follow` false), listxattr / llistxattr: a served
// node has no extended attribute (ls -l asks for ACLs and SELinux labels).
ssize_t getxattr(const char* path, const char* name, void* value, size_t size, bool follow,
                 const void* caller);
ssize_t listxattr(const char* path, char* list, size_t size, bool follow, const void* caller);

// A served directory is a DIR of our own that only these functions read;
// every other DIR goes to the C library.
DIR* opendir(const char* path, const void* caller);
DIR* fdopendir(int fd);
dirent* readdir(DIR* dir);
dirent64* readdir64(DIR* dir);
int readdir_r(DIR* dir, dirent* entry, dirent** result);
int readdir64_r(DIR* dir, dirent64* entry, dirent64** result);
int closedir(DIR* dir);
int dirfd(DIR* dir);
void rewinddir(DIR* dir);
long telldir(DIR* dir);
void seekdir(DIR* dir, long position);
int scandirat(int dirfd, const char* path, dirent*** list, int (*filter)(const dirent*),
              int (*compare)(const dirent**, const dirent**), const void* caller);
int scandirat64(int dirfd, const char* path, dirent64*** list, int (*filter)(const dirent64*),
                int (*compare)(const dirent64**, const dirent64**), const void* caller);

// A served directory can be the working directory (ibstatus does `cd
// /sys/class/infiniband; for dev in *`): the process's own stays where it
// was, and relative paths and getcwd answer from the served one until
// the next chdir or fchdir.
int chdir(const char* path, const void* caller);
int fchdir(int fd);
char* getcwd(char* buffer, size_t size);
char* get_current_dir_name();

}  // namespace verbfault::interposer::system_files

#include "libc_files.h"

#include "libc.h"

namespace verbfault::interposer::libc {

namespace {

FileFunctions resolve() {
  FileFunctions f{};
  // The versions a program built on Debian 12 (glibc 2.36) binds to.
  find(f.openat, "openat", "GLIBC_2.4");
  find(f.fopen, "fopen", "GLIBC_2.2.5");
  find(f.fopen64, "fopen64", "GLIBC_2.2.5");
  find(f.fstatat, "fstatat", "GLIBC_2.33");
  find(f.statx, "statx", "GLIBC_2.28");
  find(f.faccessat, "faccessat", "GLIBC_2.4");
  find(f.readlinkat, "readlinkat", "GLIBC_2.4");
  find(f.realpath, "realpath", "GLIBC_2.3");
  find(f.getxattr, "getxattr", "GLIBC_2.3");
  find(f.lgetxattr, "lgetxattr", "GLIBC_2.3");
  find(f.listxattr, "listxattr", "GLIBC_2.3");
  find(f.llistxattr, "llistxattr", "GLIBC_2.3");
  find(f.opendir, "opendir", "GLIBC_2.2.5");
  find(f.fdopendir, "fdopendir", "GLIBC_2.4");
  find(f.readdir, "readdir", "GLIBC_2.2.5");
  find(f.readdir64, "readdir64", "GLIBC_2.2.5");
  find(f.readdir_r, "readdir_r", "GLIBC_2.2.5");
  find(f.readdir64_r, "readdir64_r", "GLIBC_2.2.5");
  find(f.closedir, "closedir", "GLIBC_2.2.5");
  find(f.dirfd, "dirfd", "GLIBC_2.2.5");
  find(f.rewinddir, "rewinddir", "GLIBC_2.2.5");
  find(f.telldir, "telldir", "GLIBC_2.2.5");
  find(f.seekdir, "seekdir", "GLIBC_2.2.5");
  find(f.scandirat, "scandirat", "GLIBC_2.15");
  find(f.scandirat64, "scandirat64", "GLIBC_2.15");
  find(f.chdir, "chdir", "GLIBC_2.2.5");
  find(f.fchdir, "fchdir", "GLIBC_2.2.5");
  find(f.getcwd, "getcwd", "GLIBC_2.2.5");
  find(f.get_current_dir_name, "get_current_dir_name", "GLIBC_2.2.5");
  return f;
}

}  // namespace

const FileFunctions& files() {
  static const FileFunctions functions = resolve();
  return functions;
}

}  // namespace verbfault::interposer::libc

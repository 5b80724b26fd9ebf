// The C library's own network functions, found once with dlvsym
// (RTLD_NEXT): the front door exports the same names (exports_network.cpp)
// to show the simulated ports' IP interfaces, and reaches the real ones
// only through here.
#pragma once

#include <ifaddrs.h>
#include <sys/socket.h>

namespace verbfault::interposer::libc {

struct NetworkFunctions {
  int (*getifaddrs)(ifaddrs**);
  void (*freeifaddrs)(ifaddrs*);
  unsigned (*if_nametoindex)(const char*);
  char* (*if_indextoname)(unsigned, char*);
  int (*ioctl)(int, unsigned long, ...);
  int (*bind)(int, const sockaddr*, socklen_t);
  int (*connect)(int, const sockaddr*, socklen_t);
  int (*getsockname)(int, sockaddr*, socklen_t*);
  int (*getpeername)(int, sockaddr*, socklen_t*);
  ssize_t (*sendto)(int, const void*, size_t, int, const sockaddr*, socklen_t);
  ssize_t (*sendmsg)(int, const msghdr*, int);
  int (*socket)(int, int, int);
  ssize_t (*send)(int, const void*, size_t, int);
};

// Resolved on first use; never changes after.
const NetworkFunctions& network();

}  // namespace verbfault::interposer::libc

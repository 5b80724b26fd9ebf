#include "libc_network.h"

#include "libc.h"

namespace verbfault::interposer::libc {

namespace {

NetworkFunctions resolve() {
  NetworkFunctions f{};
  // The versions a program built on Debian 12 (glibc 2.36) binds to.
  find(f.getifaddrs, "getifaddrs", "GLIBC_2.3");
  find(f.freeifaddrs, "freeifaddrs", "GLIBC_2.3");
  find(f.if_nametoindex, "if_nametoindex", "GLIBC_2.2.5");
  find(f.if_indextoname, "if_indextoname", "GLIBC_2.2.5");
  find(f.ioctl, "ioctl", "GLIBC_2.2.5");
  find(f.bind, "bind", "GLIBC_2.2.5");
  find(f.connect, "connect", "GLIBC_2.2.5");
  find(f.getsockname, "getsockname", "GLIBC_2.2.5");
  find(f.getpeername, "getpeername", "GLIBC_2.2.5");
  find(f.sendto, "sendto", "GLIBC_2.2.5");
  find(f.sendmsg, "sendmsg", "GLIBC_2.2.5");
  find(f.socket, "socket", "GLIBC_2.2.5");
  find(f.send, "send", "GLIBC_2.2.5");
  return f;
}

}  // namespace

const NetworkFunctions& network() {
  static const NetworkFunctions functions = resolve();
  return functions;
}

}  // namespace verbfault::interposer::libc

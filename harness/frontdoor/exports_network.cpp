// Exported network calls of the C library: the simulated ports' IP
// interfaces (interposer/network_interfaces.h, and over rtnetlink
// interposer/route_netlink.h) and the sockets on their addresses
// (interposer/socket_addresses.h). They carry glibc's symbol
// versions (libc_table.h). accept, recvfrom and recvmsg, which the thread
// scheduler also sees, are in exports_threads.cpp.
#include "caller.h"
#include "libc_table.h"
#include "libc_network.h"
#include "network_interfaces.h"
#include "route_netlink.h"
#include "socket_addresses.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

using namespace verbfault::interposer;

extern "C" {

VERBFAULT_LIBC_NETWORK(VERBFAULT_LIBC_DEFINE)

// ioctl(2): one pointer-sized argument at most (ioctl_list(2)).
int ioctl(int fd, unsigned long request, ...) {
  va_list args;
  va_start(args, request);
  void* argument = va_arg(args, void*);
  va_end(args);
  int result = 0;
  if (network_interfaces::interface_ioctl(request, argument, &result)) return result;
  return libc::network().ioctl(fd, request, argument);
}

int socket(int domain, int type, int protocol) {
  const int fd = libc::network().socket(domain, type, protocol);
  route_netlink::opened(fd, domain, protocol);
  return fd;
}

ssize_t send(int fd, const void* buffer, size_t size, int flags) {
  if (route_netlink::followed(fd))
    if (const auto answered = route_netlink::sent(fd, buffer, size)) return *answered;
  return libc::network().send(fd, buffer, size, flags);
}

ssize_t sendto(int fd, const void* buffer, size_t size, int flags, const sockaddr* address,
               socklen_t length) {
  if (route_netlink::followed(fd))
    if (const auto answered = route_netlink::sent(fd, buffer, size)) return *answered;
  return socket_addresses::sendto(fd, buffer, size, flags, address, length);
}

ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  if (route_netlink::followed(fd))
    if (const auto answered = route_netlink::sent(fd, message)) return *answered;
  return socket_addresses::sendmsg(fd, message, flags);
}

}  // extern "C"

// Exported thread, sleep and clock calls of the C library: each forwards
// to the thread calls (threads/thread_calls.h) with its caller's address,
// so that only the program's own calls are scheduling points. They carry
// glibc's symbol versions (libc_table.h): a program built against glibc
// binds to them when libverbfault.so is preloaded or linked first. Where
// glibc 2.34 moved a function into libc under a new version, the old one
// is exported too.
#include "caller.h"
#include "libc_table.h"
#include "route_netlink.h"
#include "socket_addresses.h"
#include "thread_calls.h"

#include <sched.h>
#include <unistd.h>

using namespace verbfault::interposer;

namespace {

// The peer's address as the program sees it: a simulated port's, not its
// loopback stand-in (socket_addresses.h).
template <class Result>
Result shown(Result result, sockaddr* address, socklen_t capacity, const socklen_t* length) {
  if (result >= 0) socket_addresses::from_kernel(address, capacity, length);
  return result;
}

socklen_t capacity_of(const socklen_t* length) {
  return length != nullptr ? *length : 0;
}

// A followed NETLINK_ROUTE socket (interposer/route_netlink.h): its
// datagrams through recvmsg, with the simulated interfaces in its dumps.
ssize_t kernel_recvmsg(int fd, msghdr* message, int flags, const void* caller) {
  return thread_calls::recvmsg(fd, message, flags, caller);
}

ssize_t netlink_recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                         socklen_t* address_length, const void* caller) {
  iovec vector{buffer, length};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  message.msg_name = address;
  message.msg_namelen = address_length != nullptr ? *address_length : 0;
  const ssize_t result = route_netlink::received(fd, &message, flags, kernel_recvmsg, caller);
  if (result >= 0 && address_length != nullptr) *address_length = message.msg_namelen;
  return result;
}

}  // namespace

extern "C" {

VERBFAULT_LIBC_THREADS(VERBFAULT_LIBC_DEFINE)

// pthread_exit(3) does not return: no `return` of the generated forwarders.
void pthread_exit(void* result) {
  thread_calls::exit(result);
}

// accept(2) is accept4(2) without flags, in glibc as here.
int accept(int fd, sockaddr* address, socklen_t* length) {
  const socklen_t capacity = capacity_of(length);
  return shown(thread_calls::accept4(fd, address, length, 0, VERBFAULT_CALLER), address, capacity,
               length);
}

int accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  const socklen_t capacity = capacity_of(length);
  return shown(thread_calls::accept4(fd, address, length, flags, VERBFAULT_CALLER), address,
               capacity, length);
}

// recv(2) is recvfrom(2) without an address, in glibc as here.
ssize_t recv(int fd, void* buffer, size_t length, int flags) {
  if (route_netlink::followed(fd))
    return netlink_recvfrom(fd, buffer, length, flags, nullptr, nullptr, VERBFAULT_CALLER);
  return thread_calls::recvfrom(fd, buffer, length, flags, nullptr, nullptr, VERBFAULT_CALLER);
}

ssize_t recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                 socklen_t* address_length) {
  if (route_netlink::followed(fd))
    return netlink_recvfrom(fd, buffer, length, flags, address, address_length, VERBFAULT_CALLER);
  const socklen_t capacity = capacity_of(address_length);
  return shown(
      thread_calls::recvfrom(fd, buffer, length, flags, address, address_length, VERBFAULT_CALLER),
      address, capacity, address_length);
}

ssize_t recvmsg(int fd, msghdr* message, int flags) {
  if (route_netlink::followed(fd))
    return route_netlink::received(fd, message, flags, kernel_recvmsg, VERBFAULT_CALLER);
  if (message == nullptr) return thread_calls::recvmsg(fd, message, flags, VERBFAULT_CALLER);
  const socklen_t capacity = message->msg_namelen;
  return shown(thread_calls::recvmsg(fd, message, flags, VERBFAULT_CALLER),
               static_cast<sockaddr*>(message->msg_name), capacity, &message->msg_namelen);
}

// What a program built with _FORTIFY_SOURCE calls instead of poll, ppoll,
// read, recv and recvfrom: glibc's size checks (debug/poll_chk.c,
// debug/read_chk.c, debug/recv_chk.c, debug/recvfrom_chk.c), then
// the same as the plain calls.
[[noreturn]] void __chk_fail();

int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fds_length) {
  if (fds_length / sizeof *fds < n) __chk_fail();
  return thread_calls::poll(fds, n, timeout, VERBFAULT_CALLER);
}

int __ppoll_chk(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* sigmask,
                size_t fds_length) {
  if (fds_length / sizeof *fds < n) __chk_fail();
  return thread_calls::ppoll(fds, n, timeout, sigmask, VERBFAULT_CALLER);
}

ssize_t __read_chk(int fd, void* buffer, size_t count, size_t buffer_length) {
  if (count > buffer_length) __chk_fail();
  return thread_calls::read(fd, buffer, count, VERBFAULT_CALLER);
}

ssize_t __recv_chk(int fd, void* buffer, size_t length, size_t buffer_length, int flags) {
  if (length > buffer_length) __chk_fail();
  return thread_calls::recvfrom(fd, buffer, length, flags, nullptr, nullptr, VERBFAULT_CALLER);
}

ssize_t __recvfrom_chk(int fd, void* buffer, size_t length, size_t buffer_length, int flags,
                       sockaddr* address, socklen_t* address_length) {
  if (length > buffer_length) __chk_fail();
  const socklen_t capacity = capacity_of(address_length);
  return shown(
      thread_calls::recvfrom(fd, buffer, length, flags, address, address_length, VERBFAULT_CALLER),
      address, capacity, address_length);
}

}  // extern "C"

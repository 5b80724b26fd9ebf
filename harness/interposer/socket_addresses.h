// The simulated ports' IP addresses carry sockets too, as a RoCE netdev or
// an IPoIB interface carries TCP: programs exchange their RDMA addresses
// over a TCP connection to the same address they then connect to with
// rdma_cm (fabtests' fi_pingpong, ucx_perftest, Open MPI's launcher). No
// interface of the host has them, so a socket call that names one
// (198.18.<member>.<N+1>, or its IPv4-mapped IPv6 form) goes to the kernel
// as the loopback address 127.18.<member>.<N+1> (all of 127/8 is the
// loopback interface's), and an address the kernel gives back in 127.18/16
// is shown as the 198.18 one. The fabric's processes are one machine's,
// so a port address of another process binds too (its stand-in is on
// loopback as well); one of a device index this process does not have
// fails with EADDRNOTAVAIL, as the kernel's bind of an address it does not
// have.
#pragma once

#include <sys/socket.h>

namespace verbfault::interposer::socket_addresses {

int bind(int fd, const sockaddr* address, socklen_t length);
int connect(int fd, const sockaddr* address, socklen_t length);
int getsockname(int fd, sockaddr* address, socklen_t* length);
int getpeername(int fd, sockaddr* address, socklen_t* length);
ssize_t sendto(int fd, const void* buffer, size_t size, int flags, const sockaddr* address,
               socklen_t length);
ssize_t sendmsg(int fd, const msghdr* message, int flags);
// An address the kernel gave back (accept, recvfrom, recvmsg): shown as the
// simulated port's when it is its loopback stand-in. `*length` is the
// size the kernel wrote, `capacity` the caller's buffer's.
void from_kernel(sockaddr* address, socklen_t capacity, const socklen_t* length);

}  // namespace verbfault::interposer::socket_addresses

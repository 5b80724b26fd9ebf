// The simulated ports' IP interfaces over rtnetlink (rtnetlink(7)), as
// getifaddrs shows them (network_interfaces.h): `ip addr`, `ip link` and
// every program that asks the kernel's NETLINK_ROUTE socket for links and
// addresses find vfeth<N> / vfib<N> with the port's address beside the
// host's own. rdma-core's tests find a device's address so (`ip -j addr
// show` of the interface under /sys/class/infiniband/<dev>/device/net).
//
// A NETLINK_ROUTE socket the program makes is followed from socket(2) to
// close(2). Of what it sends, a RTM_GETLINK of one interface (by index or
// IFLA_IFNAME) and a RTM_GETADDR dump of one interface that is simulated
// are answered here, never reaching the kernel (which would answer
// ENODEV); a RTM_GETLINK or RTM_GETADDR dump of all interfaces goes to the
// kernel, and the simulated interfaces' messages are put before its
// NLMSG_DONE. Everything else passes through untouched.
//
// Each function has the return convention of the C library's function of
// that name (-1 and errno on failure).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>

namespace verbfault::interposer::route_netlink {

// socket(2) made descriptor `fd` of (domain, protocol): followed when it is
// a NETLINK_ROUTE socket of a process with simulated interfaces.
void opened(int fd, int domain, int protocol);
// close(2) of `fd`: no longer followed.
void closed(int fd);
// Whether `fd` is followed (cheap: one atomic load).
bool followed(int fd);

// A request written to a followed socket (send, sendto, sendmsg; the
// bytes gathered): the byte count when it was answered here, nullopt when
// it goes to the kernel.
std::optional<ssize_t> sent(int fd, const void* buffer, std::size_t length);
std::optional<ssize_t> sent(int fd, const msghdr* message);

// recvmsg(2) of a followed socket: an answer made here, or the kernel's
// datagram (received by `kernel`, with the program's flags) with the
// simulated interfaces put before its dump's end.
using KernelReceive = ssize_t (*)(int fd, msghdr* message, int flags, const void* caller);
ssize_t received(int fd, msghdr* message, int flags, KernelReceive kernel, const void* caller);

}  // namespace verbfault::interposer::route_netlink

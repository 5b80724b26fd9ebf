// The simulated ports' IP interfaces as the system shows them: a program
// that lists interfaces (getifaddrs(3), if_nametoindex(3), the SIOCGIF*
// ioctls of netdevice(7)) finds vfeth<N> or vfib<N> beside the host's own,
// with the address the connection manager maps to the port. libfabric's
// verbs provider finds its RDMA devices so (it binds an rdma_cm id to each
// interface address), and so do UCX's and Open MPI's interface walks.
//
// Only the program sees them: getifaddrs from libverbfault itself and from
// libibverbs and its providers (by the caller's address) lists the host's
// interfaces alone.
//
// Each function has the signature and the return convention of the C
// library's function of that name, with the caller's return address last
// where it matters.
#pragma once

#include <ifaddrs.h>

namespace verbfault::interposer::network_interfaces {

// The host's list with the simulated interfaces after it (an AF_PACKET
// and an AF_INET entry each, as the kernel reports an interface).
int getifaddrs(ifaddrs** list, const void* caller);
// Frees a list getifaddrs made, the simulated entries included.
void freeifaddrs(ifaddrs* list);
unsigned if_nametoindex(const char* name);
char* if_indextoname(unsigned index, char* name);
// An ioctl(2) on a socket: the SIOCGIF* requests of netdevice(7) that name
// a simulated interface are answered here (true, `*result` and errno set);
// every other request is the C library's (false).
bool interface_ioctl(unsigned long request, void* argument, int* result);

}  // namespace verbfault::interposer::network_interfaces

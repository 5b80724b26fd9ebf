// IP addresses on the simulated fabric, as the connection manager maps
// them to ports the way the kernel does through a netdev: each simulated
// port has the IPv4 address of the fabric's plan (fabric_address.h,
// 198.18.<member>.<device+1>: its RoCE netdev's, or its IPoIB interface's
// on InfiniBand), reachable as itself and as the IPv4-mapped IPv6 address.
#pragma once

#include "connection_manager.h"

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace verbfault::sim {
class Device;
}

namespace verbfault::sim::cm {

// The size of an address of the family the structure says (sockaddr_in,
// sockaddr_in6); 0 for AF_IB, which the simulated manager does not serve
// (librdmacm's probe at init then keeps to IP addresses), and any other.
std::size_t address_size(const sockaddr* address);
std::size_t address_size(const sockaddr_storage& address);
uint16_t port_of(const sockaddr_storage& address);  // host byte order
void set_port(sockaddr_storage& address, uint16_t port);
// The wildcard (0.0.0.0, ::). The kernel's cma_any_addr takes a loopback
// address alike (bound to it, an id has no device); here a bind to one
// fails for now (local_binding).
bool is_any(const sockaddr_storage& address);
// The same address (not port), an IPv4 one and its IPv4-mapped IPv6 form
// alike.
bool same_address(const sockaddr_storage& a, const sockaddr_storage& b);
// Where a bind to `address` lands: the wildcard binds no device; an
// address of one of this process's simulated ports binds that port;
// anything else is nobody's here (nullopt: EADDRNOTAVAIL), loopback
// included until address resolution is served: libfabric's verbs
// provider takes a device-less loopback binding for a usable address, and
// fi_pingpong -e rdm's fi_domain then fails with ENODATA.
std::optional<Binding> local_binding(const sockaddr* address);
// The GID of `device`'s port that stands for `address` (RoCE: the entry of
// the address, IBTA A17.4.5, found in the table; InfiniBand: GID 0, the
// port GUID's).
ibv_gid source_gid(const Device& device, const sockaddr_storage& address);

}  // namespace verbfault::sim::cm

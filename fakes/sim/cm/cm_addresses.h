// IP addresses on the simulated fabric, as the connection manager maps
// them to ports the way the kernel does through a netdev: each simulated
// port has the IPv4 address of the fabric's plan (fabric_address.h,
// 198.18.<member>.<device+1>: its RoCE netdev's, or its IPoIB interface's
// on InfiniBand), reachable as itself and as the IPv4-mapped IPv6 address.
#pragma once

#include "connection_manager.h"
#include "fabric_address.h"

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace verbfault::sim {
class Device;
class Fabric;
}

namespace verbfault::sim::cm {

// AF_IB (<rdma/rdma_cma.h>, linux/socket.h) and the size of its
// sockaddr_ib: the kernel knows it; the simulated manager does not serve it
// (EAFNOSUPPORT), so librdmacm's probe at init keeps to IP addresses.
inline constexpr int kAfIb = 27;
inline constexpr std::size_t kSockaddrIbSize = 48;

// The size of an address of the family the structure says (sockaddr_in,
// sockaddr_in6); 0 for AF_IB and any other.
std::size_t address_size(const sockaddr* address);
// rdma_addr_size: the same, with AF_IB's 48.
std::size_t rdma_family_size(const sockaddr* address);
std::size_t address_size(const sockaddr_storage& address);
uint16_t port_of(const sockaddr_storage& address);  // host byte order
void set_port(sockaddr_storage& address, uint16_t port);
// The wildcard (0.0.0.0, ::); loopback (127/8, ::1).
bool is_any(const sockaddr_storage& address);
bool is_loopback(const sockaddr_storage& address);
// The kernel's cma_any_addr: the wildcard or a loopback address. Bound to
// one, an id has no device; a listener on one hears every device.
bool binds_no_device(const sockaddr_storage& address);
// A group address: IPv4's 224.0.0.0/4 (also IPv4-mapped), IPv6's ff00::/8.
bool is_multicast(const sockaddr_storage& address);
// The node of the fabric whose port has `address` (198.18.<m>.<d+1>).
std::optional<FabricNode> node_of_address(const sockaddr_storage& address);
// The address of device `device` of this member, of `family` (AF_INET, or
// AF_INET6 as the IPv4-mapped form), port 0.
sockaddr_storage address_of(uint32_t member, int device, sa_family_t family);
// The same address (not port), an IPv4 one and its IPv4-mapped IPv6 form
// alike.
bool same_address(const sockaddr_storage& a, const sockaddr_storage& b);
// Where a bind to `address` lands: the wildcard binds no device; a
// fabric address of device d (of any member: one host) binds this
// process's device d;
// a loopback address binds no device, as the wildcard (the kernel's
// cma_any_addr); anything else is nobody's here (nullopt: EADDRNOTAVAIL).
std::optional<Binding> local_binding(Fabric& fabric, const sockaddr* address);
// The GID of `device`'s port that stands for `address` (RoCE: the entry of
// the address, IBTA A17.4.5, found in the table; InfiniBand: GID 0, the
// port GUID's).
ibv_gid source_gid(const Device& device, const sockaddr_storage& address);

}  // namespace verbfault::sim::cm

#include "cm_addresses.h"

#include "device.h"
#include "fabric.h"
#include "fabric_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace verbfault::sim::cm {

namespace {

// The IPv4 address (host byte order) an address is, if it is one: a
// sockaddr_in or an IPv4-mapped sockaddr_in6.
std::optional<uint32_t> ipv4_of_address(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET)
    return ntohl(reinterpret_cast<const sockaddr_in&>(address).sin_addr.s_addr);
  if (address.ss_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      uint32_t v4;
      std::memcpy(&v4, &v6.s6_addr[12], sizeof v4);
      return ntohl(v4);
    }
  }
  return std::nullopt;
}

}  // namespace

std::size_t address_size(const sockaddr* address) {
  if (address->sa_family == AF_INET) return sizeof(sockaddr_in);
  if (address->sa_family == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

std::size_t rdma_family_size(const sockaddr* address) {
  if (address->sa_family == kAfIb) return kSockaddrIbSize;
  return address_size(address);
}

std::size_t address_size(const sockaddr_storage& address) {
  return address_size(reinterpret_cast<const sockaddr*>(&address));
}

uint16_t port_of(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  return 0;
}

void set_port(sockaddr_storage& address, uint16_t port) {
  if (address.ss_family == AF_INET) reinterpret_cast<sockaddr_in&>(address).sin_port = htons(port);
  if (address.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6&>(address).sin6_port = htons(port);
}

bool is_any(const sockaddr_storage& address) {
  if (const std::optional<uint32_t> v4 = ipv4_of_address(address)) return *v4 == INADDR_ANY;
  if (address.ss_family == AF_INET6)
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6&>(address).sin6_addr);
  return false;
}

bool is_loopback(const sockaddr_storage& address) {
  if (const std::optional<uint32_t> v4 = ipv4_of_address(address)) return (*v4 >> 24) == 127;
  if (address.ss_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(address).sin6_addr);
  return false;
}

bool binds_no_device(const sockaddr_storage& address) {
  return is_any(address) || is_loopback(address);
}

std::optional<FabricNode> node_of_address(const sockaddr_storage& address) {
  const std::optional<uint32_t> v4 = ipv4_of_address(address);
  if (!v4 || (*v4 >> 16) != (198u << 8 | 18u)) return std::nullopt;
  const uint32_t device_plus_one = *v4 & 0xff;
  if (device_plus_one == 0 || device_plus_one > kDevicesPerMember) return std::nullopt;
  return FabricNode{(*v4 >> 8) & 0xff, static_cast<int>(device_plus_one - 1)};
}

sockaddr_storage address_of(uint32_t member, int device, sa_family_t family) {
  sockaddr_storage address{};
  const uint32_t be = htonl(ipv4_of(member, device));
  if (family == AF_INET6) {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
    in6.sin6_family = AF_INET6;
    in6.sin6_addr.s6_addr[10] = in6.sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&in6.sin6_addr.s6_addr[12], &be, sizeof be);
  } else {
    auto& in = reinterpret_cast<sockaddr_in&>(address);
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = be;
  }
  return address;
}

bool is_multicast(const sockaddr_storage& address) {
  if (const std::optional<uint32_t> v4 = ipv4_of_address(address)) return (*v4 >> 28) == 0xe;
  return address.ss_family == AF_INET6 &&
         reinterpret_cast<const sockaddr_in6&>(address).sin6_addr.s6_addr[0] == 0xff;
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  const std::optional<uint32_t> a4 = ipv4_of_address(a), b4 = ipv4_of_address(b);
  if (a4 || b4) return a4 == b4;
  if (a.ss_family != AF_INET6 || b.ss_family != AF_INET6) return false;
  return IN6_ARE_ADDR_EQUAL(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr,
                            &reinterpret_cast<const sockaddr_in6&>(b).sin6_addr);
}

ibv_gid source_gid(const Device& device, const sockaddr_storage& address) {
  if (device.ethernet())
    if (const std::optional<uint32_t> v4 = ipv4_of_address(address))
      if (const int index = device.find_gid(ipv4_mapped_gid(*v4)); index >= 0)
        return device.gid(index);
  return device.gid(0);
}

std::optional<Binding> local_binding(Fabric& fabric, const sockaddr* address) {
  const std::size_t size = address_size(address);
  if (size == 0) return std::nullopt;
  Binding binding;
  std::memcpy(&binding.address, address, size);
  // The kernel binds loopback with no device too (cma_any_addr).
  if (binds_no_device(binding.address)) return binding;
  // The processes of the fabric are one host's (they are: one machine),
  // and a host binds any of its addresses: device d's address of any
  // member is this process's device d (rdma_translate_ip finds the port
  // whose netdev has it), as the forked sides of rdma-core's rdmacm tests
  // both bind the address their parent read from `ip addr`.
  const std::optional<FabricNode> node = node_of_address(binding.address);
  if (!node) return std::nullopt;
  if (node->device >= static_cast<int>(fabric.devices().size())) return std::nullopt;
  binding.device = node->device;
  binding.port = 1;
  return binding;
}

}  // namespace verbfault::sim::cm

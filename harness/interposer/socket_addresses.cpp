#include "socket_addresses.h"

#include "libc_network.h"
#include "system_view.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

namespace verbfault::interposer::socket_addresses {

namespace {

// 198.18.0.0/16: the simulated ports (fakes/sim/fabric/fabric_address.h); their
// stand-ins on the loopback interface, 127.18.0.0/16.
constexpr uint32_t kPortsNetwork = 198u << 24 | 18u << 16;
constexpr uint32_t kStandInNetwork = 127u << 24 | 18u << 16;
constexpr uint32_t kNetworkMask = 0xffff0000u;

// The IPv4 address in `address` (AF_INET, or an IPv4-mapped AF_INET6), host
// byte order.
std::optional<uint32_t> ipv4_in(const sockaddr* address, socklen_t length) {
  if (address == nullptr) return std::nullopt;
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in))
    return ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr);
  if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const in6_addr& in6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&in6)) {
      uint32_t v4;
      std::memcpy(&v4, &in6.s6_addr[12], sizeof v4);
      return ntohl(v4);
    }
  }
  return std::nullopt;
}

void set_ipv4(sockaddr* address, uint32_t host_order) {
  const uint32_t network_order = htonl(host_order);
  if (address->sa_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(address)->sin_addr.s_addr = network_order;
  else
    std::memcpy(&reinterpret_cast<sockaddr_in6*>(address)->sin6_addr.s6_addr[12], &network_order,
                sizeof network_order);
}

// `address` with a simulated port's address replaced by its stand-in, in
// `storage`; `address` itself when it names none.
const sockaddr* to_kernel(const sockaddr* address, socklen_t length, sockaddr_storage& storage) {
  const std::optional<uint32_t> v4 = ipv4_in(address, length);
  if (!v4 || (*v4 & kNetworkMask) != kPortsNetwork || length > sizeof storage) return address;
  // Only where the process has simulated ports: elsewhere 198.18/16 is
  // whatever the host's routes make of it.
  if (!provider::has_network_interfaces()) return address;
  std::memcpy(&storage, address, length);
  auto* mapped = reinterpret_cast<sockaddr*>(&storage);
  set_ipv4(mapped, kStandInNetwork | (*v4 & ~kNetworkMask));
  return mapped;
}

// The fabric's processes are one machine's: a port address of any member
// is this machine's to bind, if this process has a device of that index
// (198.18.<m>.<d+1>; the connection manager binds the same addresses,
// sim/cm/cm_addresses.h local_binding).
bool is_machine_port_address(uint32_t address) {
  const uint32_t device_plus_one = address & 0xff;
  const std::size_t devices = provider::network_interfaces().size();
  return device_plus_one >= 1 && device_plus_one <= devices;
}

}  // namespace

void from_kernel(sockaddr* address, socklen_t capacity, const socklen_t* length) {
  if (address == nullptr || length == nullptr) return;
  const socklen_t written = std::min(capacity, *length);
  const std::optional<uint32_t> v4 = ipv4_in(address, written);
  if (!v4 || (*v4 & kNetworkMask) != kStandInNetwork) return;
  if (!provider::has_network_interfaces()) return;
  set_ipv4(address, kPortsNetwork | (*v4 & ~kNetworkMask));
}

int bind(int fd, const sockaddr* address, socklen_t length) {
  sockaddr_storage storage;
  const sockaddr* kernel = to_kernel(address, length, storage);
  if (kernel != address && !is_machine_port_address(*ipv4_in(address, length))) {
    errno = EADDRNOTAVAIL;  // ip(7): not an address of this host
    return -1;
  }
  return libc::network().bind(fd, kernel, length);
}

int connect(int fd, const sockaddr* address, socklen_t length) {
  sockaddr_storage storage;
  return libc::network().connect(fd, to_kernel(address, length, storage), length);
}

int getsockname(int fd, sockaddr* address, socklen_t* length) {
  const socklen_t capacity = length != nullptr ? *length : 0;
  const int result = libc::network().getsockname(fd, address, length);
  if (result == 0) from_kernel(address, capacity, length);
  return result;
}

int getpeername(int fd, sockaddr* address, socklen_t* length) {
  const socklen_t capacity = length != nullptr ? *length : 0;
  const int result = libc::network().getpeername(fd, address, length);
  if (result == 0) from_kernel(address, capacity, length);
  return result;
}

ssize_t sendto(int fd, const void* buffer, size_t size, int flags, const sockaddr* address,
               socklen_t length) {
  sockaddr_storage storage;
  return libc::network().sendto(fd, buffer, size, flags, to_kernel(address, length, storage),
                                length);
}

ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  if (message == nullptr || message->msg_name == nullptr)
    return libc::network().sendmsg(fd, message, flags);
  sockaddr_storage storage;
  const auto* name = static_cast<const sockaddr*>(message->msg_name);
  const sockaddr* kernel = to_kernel(name, message->msg_namelen, storage);
  if (kernel == name) return libc::network().sendmsg(fd, message, flags);
  msghdr copy = *message;
  copy.msg_name = const_cast<sockaddr*>(kernel);
  return libc::network().sendmsg(fd, &copy, flags);
}

}  // namespace verbfault::interposer::socket_addresses

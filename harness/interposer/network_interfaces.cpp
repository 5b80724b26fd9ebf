#include "network_interfaces.h"

#include "callers.h"
#include "libc_network.h"
#include "system_view.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace verbfault::interposer::network_interfaces {

namespace {

// IFF_LOWER_UP (linux/if.h; net/if.h, which this file needs, lacks it).
constexpr unsigned kLowerUp = 1u << 16;

// A link-layer address of up to 20 bytes (IPoIB's): sockaddr_ll has room
// for 8, and the kernel's netlink answer, like glibc's getifaddrs, carries
// the whole address behind it.
struct LinkAddress {
  sockaddr_ll ll;
  uint8_t rest[12];
};

// What getifaddrs adds for one interface, in one allocation per list.
struct InterfaceEntries {
  ifaddrs packet;
  ifaddrs inet;
  char name[IFNAMSIZ];
  LinkAddress hardware;
  LinkAddress hardware_broadcast;
  sockaddr_in address;
  sockaddr_in netmask;
  sockaddr_in broadcast;
  // AF_PACKET's ifa_data, struct rtnl_link_stats (linux/if_link.h, 24
  // counters; that header clashes with net/if.h): nothing counted.
  uint32_t stats[24];
};

// The blocks getifaddrs appended to a host list, not yet freed. Guarded by
// `blocks_mutex`.
std::mutex blocks_mutex;
std::vector<InterfaceEntries*>& blocks() {
  static auto* list = new std::vector<InterfaceEntries*>();  // never destroyed
  return *list;
}

unsigned flags_of(const provider::NetworkInterface& interface) {
  unsigned flags = IFF_UP | IFF_BROADCAST | IFF_MULTICAST;
  if (interface.running) flags |= IFF_RUNNING | kLowerUp;
  return flags;
}

uint32_t netmask_of(const provider::NetworkInterface& interface) {
  return interface.prefix_length == 0 ? 0 : ~uint32_t{0} << (32 - interface.prefix_length);
}

sockaddr_in inet_address(uint32_t host_order) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(host_order);
  return address;
}

void link_address(const provider::NetworkInterface& interface, bool broadcast, LinkAddress& out) {
  out = {};
  out.ll.sll_family = AF_PACKET;
  out.ll.sll_ifindex = static_cast<int>(interface.index);
  out.ll.sll_hatype = interface.ethernet ? ARPHRD_ETHER : ARPHRD_INFINIBAND;
  out.ll.sll_halen = static_cast<unsigned char>(interface.hardware_length);
  uint8_t bytes[20] = {};
  if (!broadcast) {
    std::copy_n(interface.hardware_address.begin(), interface.hardware_length, bytes);
  } else if (interface.ethernet) {
    std::fill_n(bytes, 6, 0xff);
  } else {
    // IPoIB's broadcast address (RFC 4391 section 4): the all-IPoIB-nodes
    // multicast GID of the default partition, behind QPN 0xffffff.
    const uint8_t ipoib[20] = {0x00, 0xff, 0xff, 0xff, 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff,
                               0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff};
    std::copy(std::begin(ipoib), std::end(ipoib), bytes);
  }
  std::memcpy(out.ll.sll_addr, bytes, sizeof out.ll.sll_addr);
  std::memcpy(out.rest, bytes + sizeof out.ll.sll_addr, sizeof out.rest);
}

void fill(const provider::NetworkInterface& interface, InterfaceEntries& e) {
  std::strncpy(e.name, interface.name.c_str(), IFNAMSIZ - 1);
  link_address(interface, false, e.hardware);
  link_address(interface, true, e.hardware_broadcast);
  e.address = inet_address(interface.ipv4);
  e.netmask = inet_address(netmask_of(interface));
  e.broadcast = inet_address(interface.ipv4 | ~netmask_of(interface));
  e.packet.ifa_name = e.name;
  e.packet.ifa_flags = flags_of(interface);
  e.packet.ifa_addr = reinterpret_cast<sockaddr*>(&e.hardware);
  e.packet.ifa_broadaddr = reinterpret_cast<sockaddr*>(&e.hardware_broadcast);
  e.packet.ifa_data = e.stats;
  e.packet.ifa_next = &e.inet;
  e.inet.ifa_name = e.name;
  e.inet.ifa_flags = flags_of(interface);
  e.inet.ifa_addr = reinterpret_cast<sockaddr*>(&e.address);
  e.inet.ifa_netmask = reinterpret_cast<sockaddr*>(&e.netmask);
  e.inet.ifa_broadaddr = reinterpret_cast<sockaddr*>(&e.broadcast);
}

std::optional<provider::NetworkInterface> interface_named(std::string_view name) {
  // Not a name the simulated interfaces can have: no device lookup at all.
  if (!name.starts_with("vfeth") && !name.starts_with("vfib")) return std::nullopt;
  for (provider::NetworkInterface& interface : provider::network_interfaces())
    if (interface.name == name) return std::move(interface);
  return std::nullopt;
}

}  // namespace

int getifaddrs(ifaddrs** list, const void* caller) {
  const int result = libc::network().getifaddrs(list);
  if (result != 0 || called_from_verbs_library(caller)) return result;
  const std::vector<provider::NetworkInterface> interfaces = provider::network_interfaces();
  if (interfaces.empty()) return result;
  // calloc: the entries are plain C structures, freed with free(3).
  auto* block = static_cast<InterfaceEntries*>(calloc(interfaces.size(), sizeof(InterfaceEntries)));
  if (block == nullptr) {
    libc::network().freeifaddrs(*list);
    *list = nullptr;
    errno = ENOMEM;
    return -1;
  }
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    fill(interfaces[i], block[i]);
    if (i + 1 < interfaces.size()) block[i].inet.ifa_next = &block[i + 1].packet;
  }
  {
    std::lock_guard lock(blocks_mutex);
    blocks().push_back(block);
  }
  ifaddrs** tail = list;
  while (*tail != nullptr) tail = &(*tail)->ifa_next;
  *tail = &block[0].packet;
  return 0;
}

void freeifaddrs(ifaddrs* list) {
  // The simulated entries come last; the host's list before them is one
  // allocation of the C library's.
  ifaddrs** link = &list;
  InterfaceEntries* ours = nullptr;
  {
    std::lock_guard lock(blocks_mutex);
    std::vector<InterfaceEntries*>& all = blocks();
    for (; *link != nullptr; link = &(*link)->ifa_next) {
      const auto found =
          std::find(all.begin(), all.end(), reinterpret_cast<InterfaceEntries*>(*link));
      if (found == all.end()) continue;
      ours = *found;
      all.erase(found);
      break;
    }
  }
  if (ours != nullptr) *link = nullptr;
  if (list != nullptr) libc::network().freeifaddrs(list);
  free(ours);
}

unsigned if_nametoindex(const char* name) {
  if (name != nullptr)
    if (const std::optional<provider::NetworkInterface> interface = interface_named(name))
      return interface->index;
  return libc::network().if_nametoindex(name);
}

char* if_indextoname(unsigned index, char* name) {
  for (const provider::NetworkInterface& interface : provider::network_interfaces())
    if (interface.index == index) {
      std::strncpy(name, interface.name.c_str(), IFNAMSIZ - 1);
      name[IFNAMSIZ - 1] = '\0';
      return name;
    }
  return libc::network().if_indextoname(index, name);
}

bool interface_ioctl(unsigned long request, void* argument, int* result) {
  // netdevice(7): the requests that name an interface in ifr_name (or, for
  // SIOCGIFNAME, by ifr_ifindex).
  switch (request) {
    case SIOCGIFFLAGS:
    case SIOCGIFADDR:
    case SIOCGIFNETMASK:
    case SIOCGIFBRDADDR:
    case SIOCGIFINDEX:
    case SIOCGIFMTU:
    case SIOCGIFHWADDR:
    case SIOCGIFNAME:
    case SIOCSIFFLAGS:
    case SIOCSIFADDR:
    case SIOCSIFNETMASK:
    case SIOCSIFBRDADDR:
    case SIOCSIFMTU:
    case SIOCSIFHWADDR:
      break;
    default:
      return false;
  }
  if (argument == nullptr) return false;
  auto* request_data = static_cast<ifreq*>(argument);
  if (request == SIOCGIFNAME) {
    for (const provider::NetworkInterface& interface : provider::network_interfaces())
      if (static_cast<int>(interface.index) == request_data->ifr_ifindex) {
        std::strncpy(request_data->ifr_name, interface.name.c_str(), IFNAMSIZ - 1);
        request_data->ifr_name[IFNAMSIZ - 1] = '\0';
        *result = 0;
        return true;
      }
    return false;
  }
  const std::optional<provider::NetworkInterface> interface = interface_named(
      std::string_view(request_data->ifr_name, strnlen(request_data->ifr_name, IFNAMSIZ)));
  if (!interface) return false;
  *result = 0;
  switch (request) {
    case SIOCGIFFLAGS:
      request_data->ifr_flags = static_cast<short>(flags_of(*interface));
      return true;
    case SIOCGIFADDR: {
      const sockaddr_in address = inet_address(interface->ipv4);
      std::memcpy(&request_data->ifr_addr, &address, sizeof address);
      return true;
    }
    case SIOCGIFNETMASK: {
      const sockaddr_in netmask = inet_address(netmask_of(*interface));
      std::memcpy(&request_data->ifr_netmask, &netmask, sizeof netmask);
      return true;
    }
    case SIOCGIFBRDADDR: {
      const sockaddr_in broadcast = inet_address(interface->ipv4 | ~netmask_of(*interface));
      std::memcpy(&request_data->ifr_broadaddr, &broadcast, sizeof broadcast);
      return true;
    }
    case SIOCGIFINDEX:
      request_data->ifr_ifindex = static_cast<int>(interface->index);
      return true;
    case SIOCGIFMTU:
      request_data->ifr_mtu = static_cast<int>(interface->mtu);
      return true;
    case SIOCGIFHWADDR:
      // The kernel copies at most sizeof sa_data (14) bytes of the address:
      // an IPoIB one is cut, as dev_get_mac_address leaves it.
      request_data->ifr_hwaddr = {};
      request_data->ifr_hwaddr.sa_family = interface->ethernet ? ARPHRD_ETHER : ARPHRD_INFINIBAND;
      std::copy_n(interface->hardware_address.begin(),
                  std::min(interface->hardware_length, sizeof request_data->ifr_hwaddr.sa_data),
                  request_data->ifr_hwaddr.sa_data);
      return true;
    default:
      // A change of a simulated interface: the port's address and state are
      // the device's (a fault brings a port down), not the program's.
      *result = -1;
      errno = EPERM;
      return true;
  }
}

}  // namespace verbfault::interposer::network_interfaces

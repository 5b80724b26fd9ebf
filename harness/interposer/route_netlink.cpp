#include "route_netlink.h"

#include "descriptor_set.h"
#include "libc_network.h"
#include "system_view.h"

#include <arpa/inet.h>
#include <net/if.h>  // before the kernel's headers (linux/if.h defers to it)

#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace verbfault::interposer::route_netlink {

namespace {

using Bytes = std::vector<std::uint8_t>;

// The followed sockets: a program's NETLINK_ROUTE socket numbered at or
// above DescriptorSet::kLimit is not followed (it sees the host's
// interfaces alone).
DescriptorSet g_followed;

// A dump the kernel answers and the simulated interfaces join.
struct Dump {
  std::uint32_t seq = 0;
  std::uint16_t type = 0;   // RTM_GETLINK or RTM_GETADDR
  std::uint8_t family = 0;  // RTM_GETADDR's ifa_family (AF_UNSPEC: all)
};

struct Socket {
  std::deque<Bytes> answers;  // datagrams to read before the kernel's
  std::optional<Dump> dump;
};

std::mutex g_mutex;  // guards sockets()

std::unordered_map<int, Socket>& sockets() {
  static auto* sockets = new std::unordered_map<int, Socket>();  // lives to _exit
  return *sockets;
}

// ---- building messages (rtnetlink(7), netlink(7)) ---------------------------

class Message {
 public:
  Message(std::uint16_t type, std::uint16_t flags, std::uint32_t seq, std::uint32_t port_id) {
    nlmsghdr header{};
    header.nlmsg_type = type;
    header.nlmsg_flags = flags;
    header.nlmsg_seq = seq;
    header.nlmsg_pid = port_id;
    append(&header, sizeof header);
  }
  template <class T>
  void body(const T& value) {
    append(&value, sizeof value);
  }
  void attribute(std::uint16_t type, const void* data, std::size_t length) {
    rtattr attribute{};
    attribute.rta_type = type;
    attribute.rta_len = static_cast<unsigned short>(RTA_LENGTH(length));
    append(&attribute, sizeof attribute);
    append(data, length);
  }
  template <class T>
  void attribute(std::uint16_t type, const T& value) {
    attribute(type, &value, sizeof value);
  }
  void attribute(std::uint16_t type, std::string_view text) {
    std::string copy(text);
    attribute(type, copy.c_str(), copy.size() + 1);
  }
  // The finished message, its length in its header, appended to `out`.
  void finish(Bytes& out) {
    nlmsghdr header;
    std::memcpy(&header, bytes_.data(), sizeof header);
    header.nlmsg_len = static_cast<std::uint32_t>(bytes_.size());
    std::memcpy(bytes_.data(), &header, sizeof header);
    out.insert(out.end(), bytes_.begin(), bytes_.end());
  }

 private:
  void append(const void* data, std::size_t length) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + length);
    bytes_.resize(NLMSG_ALIGN(bytes_.size()), 0);
  }
  Bytes bytes_;
};

// RTM_NEWLINK of `interface` (rtnl_fill_ifinfo's attributes that `ip link`
// prints). IPoIB's broadcast address: QPN 0xffffff and the IPv4 broadcast
// group of the default partition (RFC 4391 section 4).
void link_message(const provider::NetworkInterface& interface, std::uint16_t flags,
                  std::uint32_t seq, std::uint32_t port_id, Bytes& out) {
  Message message(RTM_NEWLINK, flags, seq, port_id);
  ifinfomsg info{};
  info.ifi_family = AF_UNSPEC;
  info.ifi_type = interface.ethernet ? ARPHRD_ETHER : ARPHRD_INFINIBAND;
  info.ifi_index = static_cast<int>(interface.index);
  info.ifi_flags = unsigned{IFF_UP} | unsigned{IFF_BROADCAST} | unsigned{IFF_MULTICAST};
  if (interface.running) info.ifi_flags |= unsigned{IFF_RUNNING} | unsigned{IFF_LOWER_UP};
  message.body(info);
  message.attribute(IFLA_IFNAME, std::string_view(interface.name));
  message.attribute(IFLA_TXQLEN, std::uint32_t{1000});
  message.attribute(IFLA_OPERSTATE,
                    static_cast<std::uint8_t>(interface.running ? IF_OPER_UP : IF_OPER_DOWN));
  message.attribute(IFLA_LINKMODE, std::uint8_t{0});
  message.attribute(IFLA_MTU, static_cast<std::uint32_t>(interface.mtu));
  message.attribute(IFLA_GROUP, std::uint32_t{0});
  message.attribute(IFLA_ADDRESS, interface.hardware_address.data(), interface.hardware_length);
  static constexpr std::uint8_t kEthernetBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  static constexpr std::uint8_t kIpoibBroadcast[20] = {0x00, 0xff, 0xff, 0xff, 0xff, 0x12, 0x40,
                                                       0x1b, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
                                                       0x00, 0x00, 0xff, 0xff, 0xff, 0xff};
  if (interface.ethernet)
    message.attribute(IFLA_BROADCAST, kEthernetBroadcast, sizeof kEthernetBroadcast);
  else
    message.attribute(IFLA_BROADCAST, kIpoibBroadcast, sizeof kIpoibBroadcast);
  message.finish(out);
}

// RTM_NEWADDR of `interface`'s IPv4 address (inet_fill_ifaddr), permanent.
void address_message(const provider::NetworkInterface& interface, std::uint16_t flags,
                     std::uint32_t seq, std::uint32_t port_id, Bytes& out) {
  Message message(RTM_NEWADDR, flags, seq, port_id);
  ifaddrmsg info{};
  info.ifa_family = AF_INET;
  info.ifa_prefixlen = static_cast<std::uint8_t>(interface.prefix_length);
  info.ifa_flags = IFA_F_PERMANENT;
  info.ifa_scope = RT_SCOPE_UNIVERSE;
  info.ifa_index = interface.index;
  message.body(info);
  const std::uint32_t address = htonl(interface.ipv4);
  const std::uint32_t mask =
      interface.prefix_length == 0 ? 0 : ~std::uint32_t{0} << (32 - interface.prefix_length);
  const std::uint32_t broadcast = htonl(interface.ipv4 | ~mask);
  message.attribute(IFA_ADDRESS, address);
  message.attribute(IFA_LOCAL, address);
  message.attribute(IFA_BROADCAST, broadcast);
  message.attribute(IFA_LABEL, std::string_view(interface.name));
  message.attribute(IFA_FLAGS, std::uint32_t{IFA_F_PERMANENT});
  // A permanent address's lifetimes are infinite (INFINITY_LIFE_TIME of
  // include/net/addrconf.h): `ip` prints "forever".
  constexpr std::uint32_t kForever = 0xFFFFFFFFu;
  ifa_cacheinfo lifetime{};
  lifetime.ifa_prefered = kForever;
  lifetime.ifa_valid = kForever;
  message.attribute(IFA_CACHEINFO, lifetime);
  message.finish(out);
}

void done_message(std::uint32_t seq, std::uint32_t port_id, Bytes& out) {
  Message message(NLMSG_DONE, NLM_F_MULTI, seq, port_id);
  message.body(std::int32_t{0});
  message.finish(out);
}

// The kernel's port id of `fd` (netlink(7): nl_pid of getsockname), which
// its answers carry in nlmsg_pid; 0 before the socket is bound.
std::uint32_t port_id_of(int fd) {
  sockaddr_nl address{};
  socklen_t length = sizeof address;
  if (libc::network().getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return 0;
  return address.nl_pid;
}

// The simulated interface named by a RTM_GETLINK request (its ifi_index,
// else its IFLA_IFNAME), or nullopt.
std::optional<provider::NetworkInterface> asked_link(
    const nlmsghdr& header, const std::vector<provider::NetworkInterface>& interfaces) {
  if (header.nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg))) return std::nullopt;
  ifinfomsg info;
  std::memcpy(&info, NLMSG_DATA(&header), sizeof info);
  for (const auto& interface : interfaces)
    if (info.ifi_index > 0 && static_cast<unsigned>(info.ifi_index) == interface.index)
      return interface;
  if (info.ifi_index != 0) return std::nullopt;
  int left = static_cast<int>(header.nlmsg_len - NLMSG_LENGTH(sizeof(ifinfomsg)));
  for (auto* attribute = reinterpret_cast<const rtattr*>(
           static_cast<const std::uint8_t*>(NLMSG_DATA(&header)) + NLMSG_ALIGN(sizeof info));
       RTA_OK(attribute, left); attribute = RTA_NEXT(attribute, left)) {
    if (attribute->rta_type != IFLA_IFNAME) continue;
    const std::string_view name(
        static_cast<const char*>(RTA_DATA(attribute)),
        strnlen(static_cast<const char*>(RTA_DATA(attribute)), RTA_PAYLOAD(attribute)));
    for (const auto& interface : interfaces)
      if (interface.name == name) return interface;
  }
  return std::nullopt;
}

// What the kernel would send for a request of one simulated interface:
// appended to `socket`'s answers. False: the request is the kernel's.
bool answer(int fd, Socket& socket, const nlmsghdr& header) {
  const std::vector<provider::NetworkInterface> interfaces = provider::network_interfaces();
  const bool dump = (header.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  if (header.nlmsg_type == RTM_GETLINK && !dump) {
    const std::optional<provider::NetworkInterface> interface = asked_link(header, interfaces);
    if (!interface) return false;
    Bytes reply;
    link_message(*interface, 0, header.nlmsg_seq, port_id_of(fd), reply);
    socket.answers.push_back(std::move(reply));
    return true;
  }
  if (header.nlmsg_type == RTM_GETADDR && dump &&
      header.nlmsg_len >= NLMSG_LENGTH(sizeof(ifaddrmsg))) {
    // A dump filtered to one interface (iproute2 asks so with strict
    // checking on: inet_dump_ifaddr answers ENODEV for an index it does
    // not have): the whole answer is made here.
    ifaddrmsg info;
    std::memcpy(&info, NLMSG_DATA(&header), sizeof info);
    const auto interface = std::find_if(interfaces.begin(), interfaces.end(), [&](const auto& i) {
      return info.ifa_index != 0 && i.index == info.ifa_index;
    });
    if (interface == interfaces.end()) return false;
    const std::uint32_t port_id = port_id_of(fd);
    Bytes reply;
    if (info.ifa_family == AF_UNSPEC || info.ifa_family == AF_INET)
      address_message(*interface, NLM_F_MULTI, header.nlmsg_seq, port_id, reply);
    done_message(header.nlmsg_seq, port_id, reply);
    socket.answers.push_back(std::move(reply));
    return true;
  }
  return false;
}

// A request the kernel answers: a dump of every link or address is noted,
// to be joined by the simulated interfaces.
void note_dump(Socket& socket, const nlmsghdr& header) {
  if ((header.nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP) return;
  if (header.nlmsg_type == RTM_GETLINK) {
    socket.dump = Dump{header.nlmsg_seq, RTM_GETLINK, AF_UNSPEC};
  } else if (header.nlmsg_type == RTM_GETADDR) {
    std::uint8_t family = AF_UNSPEC;
    if (header.nlmsg_len >= NLMSG_LENGTH(1))
      family = *static_cast<const std::uint8_t*>(NLMSG_DATA(&header));
    socket.dump = Dump{header.nlmsg_seq, RTM_GETADDR, family};
  }
}

std::optional<ssize_t> request(int fd, const std::uint8_t* data, std::size_t length) {
  // One request per datagram, as iproute2 and libnl send them; anything
  // else is the kernel's to parse.
  if (length < sizeof(nlmsghdr)) return std::nullopt;
  nlmsghdr header;
  std::memcpy(&header, data, sizeof header);
  if (header.nlmsg_len < sizeof header || header.nlmsg_len > length) return std::nullopt;
  if ((header.nlmsg_flags & NLM_F_REQUEST) == 0) return std::nullopt;
  Bytes copy(data, data + header.nlmsg_len);  // aligned for the NLMSG_/RTA_ macros
  const auto& aligned = *reinterpret_cast<const nlmsghdr*>(copy.data());
  std::lock_guard lock(g_mutex);
  Socket& socket = sockets()[fd];
  if (answer(fd, socket, aligned)) return static_cast<ssize_t>(length);
  note_dump(socket, aligned);
  return std::nullopt;
}

// The kernel's datagram `data` of a socket with a dump noted: as it came,
// or, when it holds the dump's NLMSG_DONE, split in two: what came before
// the end, then the simulated interfaces' messages with the end.
void take_kernel_datagram(int fd, Socket& socket, const std::uint8_t* data, std::size_t length) {
  Bytes datagram(data, data + length);
  std::size_t offset = 0;
  while (offset + sizeof(nlmsghdr) <= datagram.size()) {
    nlmsghdr header;
    std::memcpy(&header, datagram.data() + offset, sizeof header);
    if (header.nlmsg_len < sizeof header || offset + header.nlmsg_len > datagram.size()) break;
    const bool end = header.nlmsg_seq == socket.dump->seq &&
                     (header.nlmsg_type == NLMSG_DONE || header.nlmsg_type == NLMSG_ERROR);
    if (end && header.nlmsg_type == NLMSG_DONE) {
      Bytes joined;
      const std::uint32_t port_id = header.nlmsg_pid != 0 ? header.nlmsg_pid : port_id_of(fd);
      for (const auto& interface : provider::network_interfaces()) {
        if (socket.dump->type == RTM_GETLINK)
          link_message(interface, NLM_F_MULTI, header.nlmsg_seq, port_id, joined);
        else if (socket.dump->family == AF_UNSPEC || socket.dump->family == AF_INET)
          address_message(interface, NLM_F_MULTI, header.nlmsg_seq, port_id, joined);
      }
      joined.insert(joined.end(), datagram.begin() + static_cast<std::ptrdiff_t>(offset),
                    datagram.end());
      datagram.resize(offset);
      if (!datagram.empty()) socket.answers.push_back(std::move(datagram));
      socket.answers.push_back(std::move(joined));
      socket.dump.reset();
      return;
    }
    if (end) {  // the dump failed: nothing to join
      socket.dump.reset();
      break;
    }
    offset += NLMSG_ALIGN(header.nlmsg_len);
  }
  socket.answers.push_back(std::move(datagram));
}

// Copies the first answer into the program's buffers (recvmsg(2): the
// rest of a datagram larger than they are is lost, MSG_TRUNC says so).
ssize_t deliver(Socket& socket, msghdr* message, int flags) {
  const Bytes& datagram = socket.answers.front();
  std::size_t copied = 0;
  for (std::size_t i = 0; i < message->msg_iovlen && copied < datagram.size(); ++i) {
    const std::size_t n = std::min(message->msg_iov[i].iov_len, datagram.size() - copied);
    // iproute2 first peeks with an empty iovec (base NULL, length 0) to size
    // its buffer: memcpy's pointers must not be null even for 0 bytes.
    if (n == 0) continue;
    std::memcpy(message->msg_iov[i].iov_base, datagram.data() + copied, n);
    copied += n;
  }
  message->msg_flags = copied < datagram.size() ? MSG_TRUNC : 0;
  if (message->msg_name != nullptr && message->msg_namelen >= sizeof(sockaddr_nl)) {
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;  // nl_pid 0: from the kernel
    std::memcpy(message->msg_name, &kernel, sizeof kernel);
    message->msg_namelen = sizeof kernel;
  }
  message->msg_controllen = 0;
  const auto length = static_cast<ssize_t>((flags & MSG_TRUNC) != 0 ? datagram.size() : copied);
  if ((flags & MSG_PEEK) == 0) socket.answers.pop_front();
  return length;
}

}  // namespace

void opened(int fd, int domain, int protocol) {
  if (!DescriptorSet::fits(fd) || domain != AF_NETLINK || protocol != NETLINK_ROUTE) return;
  if (!provider::has_network_interfaces()) return;
  std::lock_guard lock(g_mutex);
  sockets()[fd] = Socket{};
  g_followed.insert(fd);
}

void closed(int fd) {
  if (!followed(fd)) return;
  std::lock_guard lock(g_mutex);
  sockets().erase(fd);
  g_followed.erase(fd);
}

bool followed(int fd) {
  return g_followed.contains(fd);
}

std::optional<ssize_t> sent(int fd, const void* buffer, std::size_t length) {
  if (buffer == nullptr) return std::nullopt;
  return request(fd, static_cast<const std::uint8_t*>(buffer), length);
}

std::optional<ssize_t> sent(int fd, const msghdr* message) {
  if (message == nullptr || message->msg_iov == nullptr) return std::nullopt;
  Bytes gathered;
  for (std::size_t i = 0; i < message->msg_iovlen; ++i) {
    const auto* p = static_cast<const std::uint8_t*>(message->msg_iov[i].iov_base);
    if (p != nullptr) gathered.insert(gathered.end(), p, p + message->msg_iov[i].iov_len);
  }
  return request(fd, gathered.data(), gathered.size());
}

ssize_t received(int fd, msghdr* message, int flags, KernelReceive kernel, const void* caller) {
  if (message == nullptr) return kernel(fd, message, flags, caller);
  {
    std::lock_guard lock(g_mutex);
    Socket& socket = sockets()[fd];
    if (!socket.answers.empty()) return deliver(socket, message, flags);
    if (!socket.dump) return kernel(fd, message, flags, caller);
  }
  // A dump to join: the kernel's datagram is taken whole (not peeked), so
  // that what the program peeks at is what it then reads.
  Bytes buffer(64 * 1024);
  iovec vector{buffer.data(), buffer.size()};
  msghdr own{};
  own.msg_iov = &vector;
  own.msg_iovlen = 1;
  const ssize_t n = kernel(fd, &own, flags & ~(MSG_PEEK | MSG_TRUNC), caller);
  if (n < 0) return n;
  std::lock_guard lock(g_mutex);
  Socket& socket = sockets()[fd];
  if (socket.dump)
    take_kernel_datagram(fd, socket, buffer.data(), std::min<std::size_t>(n, buffer.size()));
  else
    socket.answers.emplace_back(buffer.begin(), buffer.begin() + std::min<ssize_t>(n, 65536));
  return deliver(socket, message, flags);
}

}  // namespace verbfault::interposer::route_netlink

// Looks at the simulated ports' IP interfaces as a program that lists
// interfaces does (libfabric's verbs provider, UCX, Open MPI): through
// getifaddrs(3), if_nametoindex(3), the SIOCGIF* ioctls and TCP sockets on
// the port's address. Prints one line per question; the test
// (test_network_interfaces.cpp) checks them under LD_PRELOAD=libverbfault.so.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

std::string text_of(const sockaddr* address) {
  if (address == nullptr) return "none";
  char text[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return text;
  }
  if (address->sa_family == AF_PACKET) {
    const auto* ll = reinterpret_cast<const sockaddr_ll*>(address);
    std::string out = "hatype " + std::to_string(ll->sll_hatype) + " len " +
                      std::to_string(ll->sll_halen) + " ifindex " + std::to_string(ll->sll_ifindex);
    return out;
  }
  return "family " + std::to_string(address->sa_family);
}

void list(const char* prefix) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) {
    std::printf("getifaddrs: %s\n", std::strerror(errno));
    return;
  }
  for (ifaddrs* a = all; a != nullptr; a = a->ifa_next) {
    if (std::strncmp(a->ifa_name, prefix, std::strlen(prefix)) != 0) continue;
    std::printf("ifaddr %s: %s netmask %s broadcast %s flags up=%d running=%d loopback=%d\n",
                a->ifa_name, text_of(a->ifa_addr).c_str(), text_of(a->ifa_netmask).c_str(),
                text_of(a->ifa_broadaddr).c_str(), (a->ifa_flags & IFF_UP) != 0,
                (a->ifa_flags & IFF_RUNNING) != 0, (a->ifa_flags & IFF_LOOPBACK) != 0);
  }
  bool has_loopback = false;
  for (ifaddrs* a = all; a != nullptr; a = a->ifa_next)
    has_loopback = has_loopback || std::strcmp(a->ifa_name, "lo") == 0;
  std::printf("host's lo listed: %d\n", has_loopback);
  freeifaddrs(all);
}

void ioctls(const char* name) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ifreq request{};
  std::strncpy(request.ifr_name, name, IFNAMSIZ - 1);
  int r = ioctl(fd, SIOCGIFFLAGS, &request);
  std::printf("SIOCGIFFLAGS %s: %d up=%d\n", name, r, r == 0 && (request.ifr_flags & IFF_UP) != 0);
  r = ioctl(fd, SIOCGIFADDR, &request);
  std::printf("SIOCGIFADDR %s: %d %s\n", name, r, r == 0 ? text_of(&request.ifr_addr).c_str() : "");
  r = ioctl(fd, SIOCGIFMTU, &request);
  std::printf("SIOCGIFMTU %s: %d %d\n", name, r, r == 0 ? request.ifr_mtu : 0);
  r = ioctl(fd, SIOCGIFINDEX, &request);
  const int index = request.ifr_ifindex;
  std::printf("SIOCGIFINDEX %s: %d same as if_nametoindex: %d\n", name, r,
              r == 0 && static_cast<unsigned>(index) == if_nametoindex(name));
  char back[IF_NAMESIZE] = "";
  std::printf("if_indextoname: %s\n",
              if_indextoname(if_nametoindex(name), back) != nullptr ? back : std::strerror(errno));
  r = ioctl(fd, SIOCSIFMTU, &request);
  std::printf("SIOCSIFMTU %s: %d %s\n", name, r, r == 0 ? "" : std::strerror(errno));
  std::strncpy(request.ifr_name, "vfnone9", IFNAMSIZ - 1);
  r = ioctl(fd, SIOCGIFFLAGS, &request);
  std::printf("SIOCGIFFLAGS vfnone9: %d %s\n", r, r == 0 ? "" : std::strerror(errno));
  close(fd);
}

void tcp(const char* address_text, const char* foreign_text) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  inet_pton(AF_INET, address_text, &address.sin_addr);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  int r = bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address);
  std::printf("bind %s: %d %s\n", address_text, r, r == 0 ? "" : std::strerror(errno));
  listen(listener, 1);
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &length);
  std::printf("getsockname: %s\n", text_of(reinterpret_cast<sockaddr*>(&bound)).c_str());
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  r = connect(client, reinterpret_cast<sockaddr*>(&bound), sizeof bound);
  std::printf("connect: %d %s\n", r, r == 0 ? "" : std::strerror(errno));
  sockaddr_in peer{};
  length = sizeof peer;
  const int accepted = accept(listener, reinterpret_cast<sockaddr*>(&peer), &length);
  std::printf("accept: %s\n", accepted >= 0 ? "ok" : std::strerror(errno));
  length = sizeof peer;
  getpeername(client, reinterpret_cast<sockaddr*>(&peer), &length);
  std::printf("client's peer: %s\n", text_of(reinterpret_cast<sockaddr*>(&peer)).c_str());
  const char message[] = "hello";
  const ssize_t sent = send(client, message, sizeof message, 0);
  const ssize_t received = recv(accepted, &peer, sizeof peer, 0);
  std::printf("sent %zd, received %zd\n", sent, received);
  close(accepted);
  close(client);
  close(listener);

  sockaddr_in foreign{};
  foreign.sin_family = AF_INET;
  inet_pton(AF_INET, foreign_text, &foreign.sin_addr);
  const int other = socket(AF_INET, SOCK_STREAM, 0);
  r = bind(other, reinterpret_cast<sockaddr*>(&foreign), sizeof foreign);
  std::printf("bind %s: %d %s\n", foreign_text, r, r == 0 ? "" : std::strerror(errno));
  close(other);
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "vfib0";
  const char* address = argc > 2 ? argv[2] : "198.18.0.1";
  const char* foreign = argc > 3 ? argv[3] : "198.18.1.1";
  list("vf");
  ioctls(name);
  tcp(address, foreign);
  return 0;
}

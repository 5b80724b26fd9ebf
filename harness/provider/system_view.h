// The simulated devices as the system shows them (sysfs and /dev), for the
// interposer's file calls: what a path names there, if anything. Real
// devices' files are the kernel's and never pass through here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::provider {

enum class SystemNodeKind { kAbsent, kDirectory, kFile, kSymlink, kCharDevice };

struct SystemNode {
  SystemNodeKind kind = SystemNodeKind::kAbsent;
  std::string text;    // a file's contents, a symlink's target
  int read_error = 0;  // a file whose read fails with this errno
  unsigned major = 0;  // a character device's number
  unsigned minor = 0;
  std::vector<std::string> entries;  // a directory's names, sorted, no . and ..
  // The connection manager's node (/dev/infiniband/rdma_cm): open it with
  // provider::cm_open (connection_manager.h).
  bool connection_manager = false;
};

// Whether `path` (absolute, normalized) lies where simulated devices add
// files: cheap, no lock. False when the process has no simulated device.
bool system_path_prefix(std::string_view path);
// What `path` (absolute, normalized; the last symlink not followed) is
// among the files the simulated devices add; kAbsent: none of them.
SystemNode system_node(std::string_view path);

// The IP interface behind each simulated port (its RoCE netdev, its IPoIB
// interface), for getifaddrs(3), if_nametoindex(3) and the SIOCGIF* ioctls.
struct NetworkInterface {
  std::string name;       // vfeth<N> (RoCE) or vfib<N> (InfiniBand)
  unsigned index = 0;     // its interface index
  bool ethernet = false;  // ARPHRD_ETHER; else ARPHRD_INFINIBAND
  bool running = false;   // the port is ACTIVE
  uint32_t ipv4 = 0;      // host byte order
  unsigned prefix_length = 0;
  unsigned mtu = 0;
  std::array<uint8_t, 20> hardware_address{};
  std::size_t hardware_length = 0;
};
// This process's simulated ports' interfaces; empty without simulated
// devices.
std::vector<NetworkInterface> network_interfaces();
// Whether the process has simulated devices (and so their interfaces):
// cheap, no copy.
bool has_network_interfaces();

}  // namespace verbfault::provider

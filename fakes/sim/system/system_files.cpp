#include "system_files.h"

#include "verbfault/sim/cm.h"

#include "device.h"
#include "fabric.h"
#include "network_interfaces.h"
#include "printf_string.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

namespace verbfault::sim {

namespace {

SystemNode directory(std::vector<std::string> entries) {
  std::sort(entries.begin(), entries.end());
  SystemNode node;
  node.kind = SystemNodeKind::kDirectory;
  node.entries = std::move(entries);
  return node;
}

// A sysfs attribute: one line, newline-terminated, as every show() of the
// kernel's writes it.
SystemNode file(std::string line) {
  SystemNode node;
  node.kind = SystemNodeKind::kFile;
  node.text = std::move(line) + "\n";
  return node;
}

// An attribute whose read fails, as the kernel's gid_attrs of an entry
// that holds no GID (show_port_gid_attr_gid_type: -EINVAL).
SystemNode unreadable(int error) {
  SystemNode node;
  node.kind = SystemNodeKind::kFile;
  node.read_error = error;
  return node;
}

SystemNode symlink(std::string target) {
  SystemNode node;
  node.kind = SystemNodeKind::kSymlink;
  node.text = std::move(target);
  return node;
}

std::vector<std::string> numbered(int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(std::to_string(i));
  return names;
}

// "42" -> 42; anything else (empty, a sign, a leading zero, junk) -> -1,
// as sysfs has exactly one name per number.
int number(std::string_view text) {
  if (text.empty() || text.size() > 6 || (text.size() > 1 && text[0] == '0')) return -1;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    path.remove_prefix(1);  // the '/'
    const size_t end = std::min(path.find('/'), path.size());
    parts.push_back(path.substr(0, end));
    path.remove_prefix(end);
  }
  return parts;
}

// `path` is `dir` itself (rest empty) or below it (rest: what follows the
// '/'); nullopt: neither.
std::optional<std::string_view> below(std::string_view path, std::string_view dir) {
  if (path.substr(0, dir.size()) != dir) return std::nullopt;
  if (path.size() == dir.size()) return std::string_view{};
  if (path[dir.size()] != '/') return std::nullopt;
  return path.substr(dir.size() + 1);
}

// The number of the first uverbs character device the simulated devices
// take: after the real ones, so that /dev/infiniband/uverbsN of a real
// device (rxe0's uverbs0 in the VM) is never shadowed. Read with the
// system calls themselves: the front door's opendir would ask us again.
int first_free_uverbs() {
  static const int first = [] {
    int highest = -1;
    const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/sys/class/infiniband_verbs",
                                            O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd < 0) return 0;
    alignas(8) char buffer[4096];
    for (;;) {
      const long n = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
        int index = -1;
        if (std::sscanf(entry->d_name, "uverbs%d", &index) == 1) highest = std::max(highest, index);
        at += entry->d_reclen;
      }
    }
    syscall(SYS_close, fd);
    return highest + 1;
  }();
  return first;
}

const char* port_state_name(int state) {
  // drivers/infiniband/core/sysfs.c, state_show.
  static const char* const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return state >= 0 && state < 6 ? names[state] : "UNKNOWN";
}

const char* phys_state_name(int state) {
  // ib_port_phys_state_str (include/rdma/ib_verbs.h).
  static const char* const names[] = {
      "<unknown>",         "Sleep",   "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
      "LinkErrorRecovery", "Phy Test"};
  return state >= 0 && state < 8 ? names[state] : "<unknown>";
}

// rate_show of the kernel: the lane speed (in 0.1 Gb/s) times the width,
// "100 Gb/sec (4X EDR)".
std::string rate_text(const ibv_port_attr& port) {
  int rate = 25;
  const char* speed = "";
  switch (port.active_speed) {
    case 2:
      rate = 50, speed = " DDR";
      break;
    case 4:
      rate = 100, speed = " QDR";
      break;
    case 8:
      rate = 100, speed = " FDR10";
      break;
    case 16:
      rate = 140, speed = " FDR";
      break;
    case 32:
      rate = 250, speed = " EDR";
      break;
    case 64:
      rate = 500, speed = " HDR";
      break;
    case 128:
      rate = 1000, speed = " NDR";
      break;
    default:
      break;  // 1: SDR, no suffix
  }
  int width = 1;
  switch (port.active_width) {
    case 2:
      width = 4;
      break;
    case 4:
      width = 8;
      break;
    case 8:
      width = 12;
      break;
    case 16:
      width = 2;
      break;
    default:
      break;
  }
  rate *= width;
  return printf_string("%d%s Gb/sec (%dX%s)", rate / 10, rate % 10 != 0 ? ".5" : "", width, speed);
}

std::string gid_text(const ibv_gid& gid) {
  // %pI6: eight groups of four hex digits.
  std::string text;
  for (int i = 0; i < 16; i += 2)
    text += printf_string("%s%02x%02x", i == 0 ? "" : ":", gid.raw[i], gid.raw[i + 1]);
  return text;
}

std::string guid_text(__be64 guid_be) {
  const uint64_t g = be64toh(guid_be);
  return printf_string("%04x:%04x:%04x:%04x", unsigned(g >> 48) & 0xffff,
                       unsigned(g >> 32) & 0xffff, unsigned(g >> 16) & 0xffff,
                       unsigned(g) & 0xffff);
}

SystemNode port_node(Device& device, std::span<const std::string_view> rest) {
  const ibv_port_attr& port = device.port();
  if (rest.empty())
    return directory({"cap_mask", "gid_attrs", "gids", "lid", "lid_mask_count", "link_layer",
                      "phys_state", "pkeys", "rate", "sm_lid", "sm_sl", "state"});
  const std::string_view name = rest[0];
  if (rest.size() == 1) {
    if (name == "state")
      return file(printf_string("%d: %s", port.state, port_state_name(port.state)));
    if (name == "phys_state")
      return file(printf_string("%d: %s", port.phys_state, phys_state_name(port.phys_state)));
    if (name == "rate") return file(rate_text(port));
    if (name == "lid") return file(printf_string("0x%x", port.lid));
    if (name == "sm_lid") return file(printf_string("0x%x", port.sm_lid));
    if (name == "sm_sl") return file(printf_string("%u", port.sm_sl));
    if (name == "lid_mask_count") return file(printf_string("%u", port.lmc));
    if (name == "cap_mask") return file(printf_string("0x%08x", port.port_cap_flags));
    if (name == "link_layer") return file(device.ethernet() ? "Ethernet" : "InfiniBand");
    if (name == "gids") return directory(numbered(port.gid_tbl_len));
    if (name == "pkeys") return directory(numbered(port.pkey_tbl_len));
    if (name == "gid_attrs") return directory({"ndevs", "types"});
    return {};
  }
  const int index = rest.size() == 2 ? number(rest[1]) : -1;
  if (name == "gids" && index >= 0 && index < port.gid_tbl_len)
    return file(gid_text(device.gid(index)));
  if (name == "pkeys" && index >= 0 && index < port.pkey_tbl_len)
    return file(index == 0 ? "0xffff" : "0x0000");  // the default partition (IBA 10.9.1.2)
  if (name != "gid_attrs") return {};
  const std::string_view table = rest[1];
  if (table != "types" && table != "ndevs") return {};
  if (rest.size() == 2) return directory(numbered(port.gid_tbl_len));
  const int entry = rest.size() == 3 ? number(rest[2]) : -1;
  if (entry < 0 || entry >= port.gid_tbl_len) return {};
  if (device.gid_empty(entry)) return unreadable(EINVAL);
  if (table == "types")
    return file(device.gid_type(entry) == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1");
  // A RoCE entry names the netdev its address is on (rdma_read_gid_attr_ndev_rcu);
  // an InfiniBand entry has none: EINVAL, the kernel's answer.
  if (device.ethernet()) return file(interface_of(device, device.fabric().member()).name);
  return unreadable(EINVAL);
}

// /sys/class/net/<name> of the port's interface, as the bus device's net/
// directory links it: the attributes a program reads to find the
// interface of an RDMA device (rdma-core's tests, `rdma link`): name,
// index, type (ARPHRD_*), hardware address, MTU, operational state.
SystemNode interface_node(const Device& device, std::span<const std::string_view> rest) {
  const NetworkInterface interface = interface_of(device, device.fabric().member());
  if (rest.empty()) return directory({interface.name});
  if (rest[0] != interface.name) return {};
  if (rest.size() == 1)
    return directory({"addr_len", "address", "ifindex", "mtu", "operstate", "type"});
  if (rest.size() != 2) return {};
  const std::string_view name = rest[1];
  if (name == "addr_len") return file(std::to_string(interface.hardware_length));
  if (name == "address") {
    std::string text;
    for (std::size_t i = 0; i < interface.hardware_length; ++i)
      text += printf_string(i == 0 ? "%02x" : ":%02x", interface.hardware_address[i]);
    return file(text);
  }
  if (name == "ifindex") return file(std::to_string(interface.index));
  if (name == "mtu") return file(std::to_string(interface.mtu));
  if (name == "operstate") return file(interface.running ? "up" : "down");
  if (name == "type") return file(interface.ethernet ? "1" : "32");  // ARPHRD_ETHER, _INFINIBAND
  return {};
}

SystemNode device_node(Device& device, std::span<const std::string_view> rest) {
  const DeviceProfile& profile = device.profile();
  if (rest.empty())
    return directory({"board_id", "device", "fw_ver", "hca_type", "hw_rev", "node_desc",
                      "node_guid", "node_type", "ports", "sys_image_guid"});
  const std::string_view name = rest[0];
  if (rest.size() == 1) {
    if (name == "node_desc") return file("verbfault simulated HCA " + device.name());
    if (name == "fw_ver") return file(profile.fw_ver);
    if (name == "board_id") return file(profile.board_id);
    if (name == "hca_type") return file(profile.hca_type);
    if (name == "hw_rev") return file(printf_string("%x", profile.device.hw_ver));  // mlx5: "%x"
    if (name == "node_type") return file("1: CA");
    if (name == "node_guid") return file(guid_text(profile.device.node_guid));
    if (name == "sys_image_guid") return file(guid_text(profile.device.sys_image_guid));
    if (name == "ports") return directory({"1"});
    // The bus device: no PCI function behind a simulated HCA, so no NUMA
    // node either (what the kernel reports for a device without one); its
    // network interface under net/, as a NIC's.
    if (name == "device") return directory({"net", "numa_node"});
    return {};
  }
  if (name == "device" && rest.size() == 2 && rest[1] == "numa_node") return file("-1");
  if (name == "device" && rest[1] == "net") return interface_node(device, rest.subspan(2));
  if (name == "ports" && rest[1] == "1") return port_node(device, rest.subspan(2));
  return {};
}

Device* device_named(Fabric& fabric, std::string_view name) {
  for (auto& device : fabric.devices())
    if (device->name() == name) return device.get();
  return nullptr;
}

Device* device_of_uverbs(Fabric& fabric, std::string_view name) {
  if (name.substr(0, 6) != "uverbs") return nullptr;
  const int index = number(name.substr(6));
  if (index < 0) return nullptr;
  for (auto& device : fabric.devices())
    if (uverbs_index(*device) == index) return device.get();
  return nullptr;
}

std::vector<std::string> device_names(Fabric& fabric) {
  std::vector<std::string> names;
  for (auto& device : fabric.devices()) names.push_back(device->name());
  return names;
}

std::vector<std::string> uverbs_names(Fabric& fabric) {
  std::vector<std::string> names;
  for (auto& device : fabric.devices())
    names.push_back("uverbs" + std::to_string(uverbs_index(*device)));
  return names;
}

// The connection manager's nodes (cm.h), unless the system has a real one:
// /dev/infiniband/rdma_cm, and the misc class entry librdmacm reads its
// ABI version from (drivers/infiniband/core/ucma.c registers a misc device
// with an abi_version attribute; class/misc/<name> is a symlink to
// devices/virtual/misc/<name>, which holds `dev` as every device does).
bool serves_connection_manager() {
  static const bool served = !cm::real_device_present();
  return served;
}

SystemNode connection_manager_node() {
  SystemNode node;
  node.kind = SystemNodeKind::kCharDevice;
  node.major = cm::kMiscMajor;
  node.minor = cm::kMinor;
  node.connection_manager = true;
  return node;
}

std::optional<SystemNode> misc_node(std::string_view path) {
  if (!serves_connection_manager()) return std::nullopt;
  if (auto rest = below(path, kMiscClass)) {
    if (rest->empty()) return symlink("../../devices/virtual/misc/rdma_cm");
    return SystemNode{};
  }
  if (auto rest = below(path, kMiscDevices)) {
    if (rest->empty()) return directory({"abi_version", "dev"});
    if (*rest == "abi_version") return file("4");  // RDMA_USER_CM_ABI_VERSION
    if (*rest == "dev") return file(printf_string("%u:%u", cm::kMiscMajor, cm::kMinor));
    return SystemNode{};
  }
  return std::nullopt;
}

// The node at `path`, its class links already followed.
SystemNode node_at(Fabric& fabric, std::string_view path) {
  if (std::optional<SystemNode> misc = misc_node(path)) return *misc;
  if (auto rest = below(path, kDeviceNodes)) {
    if (rest->empty()) {
      std::vector<std::string> names = uverbs_names(fabric);
      if (serves_connection_manager()) names.insert(names.begin(), "rdma_cm");
      return directory(std::move(names));
    }
    if (*rest == "rdma_cm" && serves_connection_manager()) return connection_manager_node();
    Device* device = device_of_uverbs(fabric, *rest);
    if (device == nullptr) return {};
    SystemNode node;
    node.kind = SystemNodeKind::kCharDevice;
    node.major = kUverbsMajor;
    node.minor = kUverbsBaseMinor + static_cast<unsigned>(uverbs_index(*device));
    return node;
  }
  if (auto rest = below(path, kVerbsClass)) {
    if (rest->empty()) {
      std::vector<std::string> names = uverbs_names(fabric);
      names.push_back("abi_version");
      return directory(std::move(names));
    }
    if (*rest == "abi_version") return file("6");  // IB_USER_VERBS_ABI_VERSION
    if (device_of_uverbs(fabric, *rest) != nullptr)
      return symlink("../../devices/virtual/infiniband_verbs/" + std::string(*rest));
    return {};
  }
  if (auto rest = below(path, kVerbsDevices)) {
    if (rest->empty()) return directory(uverbs_names(fabric));
    // The views point into `owned`, which must outlive them.
    const std::string owned = "/" + std::string(*rest);
    const std::vector<std::string_view> parts = components(owned);
    Device* device = device_of_uverbs(fabric, parts[0]);
    if (device == nullptr) return {};
    if (parts.size() == 1) return directory({"abi_version", "dev", "ibdev"});
    if (parts.size() != 2) return {};
    if (parts[1] == "ibdev") return file(device->name());
    if (parts[1] == "abi_version")
      return file("1");  // the driver's ABI (rdma-core's
                         // providers check it, not ours)
    if (parts[1] == "dev")
      return file(printf_string("%u:%u", kUverbsMajor,
                                kUverbsBaseMinor + static_cast<unsigned>(uverbs_index(*device))));
    return {};
  }
  if (auto rest = below(path, kInfinibandClass)) {
    if (rest->empty()) return directory(device_names(fabric));
    if (device_named(fabric, *rest) != nullptr)
      return symlink("../../devices/virtual/infiniband/" + std::string(*rest));
    return {};
  }
  if (auto rest = below(path, kInfinibandDevices)) {
    if (rest->empty()) return directory(device_names(fabric));
    const std::string owned = "/" + std::string(*rest);
    const std::vector<std::string_view> parts = components(owned);
    Device* device = device_named(fabric, parts[0]);
    if (device == nullptr) return {};
    return device_node(*device, std::span(parts).subspan(1));
  }
  return {};
}

// A path through a class link (/sys/class/infiniband/vfsim0/ports/...)
// as the device directory it leads to; other paths as they are.
std::string follow_class_links(std::string_view path) {
  if (auto rest = below(path, kMiscClass); rest && !rest->empty())
    return std::string(kMiscDevices) + "/" + std::string(*rest);
  if (auto rest = below(path, kInfinibandClass); rest && rest->find('/') != std::string_view::npos)
    return std::string(kInfinibandDevices) + "/" + std::string(*rest);
  if (auto rest = below(path, kVerbsClass); rest && rest->find('/') != std::string_view::npos)
    return std::string(kVerbsDevices) + "/" + std::string(*rest);
  return std::string(path);
}

}  // namespace

int uverbs_index(const Device& device) {
  return first_free_uverbs() + device.index();
}

bool system_path_prefix(std::string_view path) {
  for (std::string_view dir : {kInfinibandClass, kVerbsClass, kInfinibandDevices, kVerbsDevices,
                               kDeviceNodes, kMiscClass, kMiscDevices})
    if (below(path, dir)) return true;
  return false;
}

SystemNode system_node(std::string_view path) {
  if (!system_path_prefix(path)) return {};
  // Not a verbs call: no step of the device, only its state read.
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return node_at(fabric, follow_class_links(path));
}

}  // namespace verbfault::sim

#include "system_view.h"

#include "verbfault/sim/provider.h"

namespace verbfault::provider {

// The two enumerations name the same kinds in the same order.
static_assert(static_cast<int>(SystemNodeKind::kCharDevice) ==
              static_cast<int>(sim::SystemNodeKind::kCharDevice));
static_assert(static_cast<int>(SystemNodeKind::kSymlink) ==
              static_cast<int>(sim::SystemNodeKind::kSymlink));

bool system_path_prefix(std::string_view path) {
  return sim::system_path_prefix(path) && !sim::devices().empty();
}

SystemNode system_node(std::string_view path) {
  sim::rejoin_if_forked();  // a forked child shows its own addresses
  sim::SystemNode found = sim::system_node(path);
  SystemNode node;
  node.kind = static_cast<SystemNodeKind>(found.kind);
  node.text = std::move(found.text);
  node.read_error = found.read_error;
  node.major = found.major;
  node.minor = found.minor;
  node.entries = std::move(found.entries);
  node.connection_manager = found.connection_manager;
  return node;
}

bool has_network_interfaces() {
  return !sim::devices().empty();
}

std::vector<NetworkInterface> network_interfaces() {
  if (!has_network_interfaces()) return {};
  sim::rejoin_if_forked();
  std::vector<NetworkInterface> interfaces;
  for (sim::NetworkInterface& found : sim::network_interfaces()) {
    NetworkInterface& out = interfaces.emplace_back();
    out.name = std::move(found.name);
    out.index = found.index;
    out.ethernet = found.ethernet;
    out.running = found.running;
    out.ipv4 = found.ipv4;
    out.prefix_length = found.prefix_length;
    out.mtu = found.mtu;
    out.hardware_address = found.hardware_address;
    out.hardware_length = found.hardware_length;
  }
  return interfaces;
}

}  // namespace verbfault::provider

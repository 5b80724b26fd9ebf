#include "network_interfaces.h"

#include "device.h"
#include "fabric.h"
#include "fabric_address.h"
#include "printf_string.h"

#include <mutex>

namespace verbfault::sim {

namespace {

// The hardware address a port's interface has. RoCE: the netdev's MAC
// (fabric_address.h, the one the GIDs are made from). IPoIB (RFC 4391
// section 9.1.1): 4 bytes of flags and the interface's QPN, then the
// port's GID 0; the QPN a fixed one, as no datagram QP stands behind it.
void set_hardware_address(const Device& device, uint32_t member, NetworkInterface& out) {
  if (device.ethernet()) {
    const std::array<uint8_t, 6> mac = mac_of(member, device.index());
    std::copy(mac.begin(), mac.end(), out.hardware_address.begin());
    out.hardware_length = mac.size();
    return;
  }
  const uint8_t qpn[4] = {0x00, 0x00, 0x00, 0x48};
  std::copy(std::begin(qpn), std::end(qpn), out.hardware_address.begin());
  const ibv_gid gid = link_local_gid(ib_guid_of(member, device.index()));
  std::copy(std::begin(gid.raw), std::end(gid.raw), out.hardware_address.begin() + 4);
  out.hardware_length = 20;
}

}  // namespace

NetworkInterface interface_of(const Device& device, uint32_t member) {
  NetworkInterface out;
  out.name = printf_string(device.ethernet() ? "vfeth%d" : "vfib%d", device.index());
  out.index = kInterfaceIndexBase + static_cast<unsigned>(device.index());
  out.ethernet = device.ethernet();
  out.running = device.port().state == IBV_PORT_ACTIVE;
  out.ipv4 = ipv4_of(member, device.index());
  out.prefix_length = kFabricPrefixLength;
  // rxe's netdev is an Ethernet one (1500); IPoIB in datagram mode has
  // the 2048-byte IB MTU less its 4-byte header.
  out.mtu = device.ethernet() ? 1500 : 2044;
  set_hardware_address(device, member, out);
  return out;
}

std::vector<NetworkInterface> network_interfaces() {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  std::vector<NetworkInterface> interfaces;
  for (auto& device : fabric.devices()) interfaces.push_back(interface_of(*device, fabric.member()));
  return interfaces;
}

}  // namespace verbfault::sim

// Where things are on the local fabric: which member's device a LID names,
// which QP numbers a member hands out. A pure function of the member index,
// so that a process started as member N (VERBFAULT_PROC=N) gets the same
// LIDs, GIDs and QP numbers in every run.
#pragma once

#include <infiniband/verbs.h>

#include <endian.h>

#include <array>
#include <cstdint>
#include <optional>

namespace verbfault::sim {

// Each member has LIDs for up to 16 devices (VERBFAULT_SIM_DEVICES <= 16).
inline constexpr uint32_t kDevicesPerMember = 16;
// QP numbers are 24 bits (IBA 9.2.3): 64 members with 2^16 each.
inline constexpr uint32_t kQpnsPerMember = 1u << 16;

// IBA 4.1.3: unicast LIDs are 0x0001..0xbfff; member 0's device 0 is LID 1.
inline uint16_t lid_of(uint32_t member, int device) {
  return static_cast<uint16_t>(1 + member * kDevicesPerMember + static_cast<uint32_t>(device));
}
// The member a LID of the standard plan belongs to.
inline uint32_t member_of_lid(uint16_t lid) {
  return (lid - 1u) / kDevicesPerMember;
}

// QPNs 0 and 1 are the special QPs (IBA 10.2.5): member 0 starts at 0x11,
// as a lone process always did.
inline uint32_t first_qpn(uint32_t member) {
  return member == 0 ? 0x11 : member * kQpnsPerMember;
}
inline uint32_t end_qpn(uint32_t member) {
  return (member + 1) * kQpnsPerMember;
}

// Device d of member m as a node on the fabric, the inverse of the
// addresses below.
struct FabricNode {
  uint32_t member = 0;
  int device = 0;
};

// The InfiniBand node/port GUID (host byte order): the simulated device's
// OUI-like prefix, the member and the device.
inline uint64_t ib_guid_of(uint32_t member, int device) {
  return 0x02fa'f100'0000'0000ull | uint64_t{member} << 16 | static_cast<uint64_t>(device + 1);
}

// RoCE: the port's netdev MAC, 02:fa:f1:00:<m>:<d+1> (locally administered),
// and its EUI-64 (RFC 4291 appendix A: ff:fe in the middle, the U/L bit
// flipped), which is both the node GUID (rxe takes its GUID from the MAC the
// same way) and the interface id of the link-local GID.
inline std::array<uint8_t, 6> mac_of(uint32_t member, int device) {
  return {0x02, 0xfa, 0xf1, 0x00, static_cast<uint8_t>(member), static_cast<uint8_t>(device + 1)};
}
inline uint64_t eui64_of(uint32_t member, int device) {
  const std::array<uint8_t, 6> mac = mac_of(member, device);
  const uint8_t bytes[8] = {
      static_cast<uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
  uint64_t eui = 0;
  for (uint8_t b : bytes) eui = eui << 8 | b;
  return eui;
}
// RoCE: the netdev's IPv4 address, 198.18.<m>.<d+1> (RFC 2544's benchmark
// range: never a real network's), host byte order.
// Every member's ports share one subnet, 198.18.0.0/16 (RFC 2544's
// benchmarking range, routed nowhere), as the hosts of one fabric's IPoIB
// or RoCE network do.
inline constexpr unsigned kFabricPrefixLength = 16;
inline uint32_t ipv4_of(uint32_t member, int device) {
  return 198u << 24 | 18u << 16 | (member & 0xff) << 8 | static_cast<uint32_t>(device + 1);
}

inline constexpr uint64_t kLinkLocalPrefix = 0xfe80'0000'0000'0000ull;

inline ibv_gid link_local_gid(uint64_t interface_id) {
  ibv_gid gid{};
  gid.global.subnet_prefix = htobe64(kLinkLocalPrefix);
  gid.global.interface_id = htobe64(interface_id);
  return gid;
}
// RFC 4291 2.5.5.2: ::ffff:a.b.c.d.
inline ibv_gid ipv4_mapped_gid(uint32_t ipv4) {
  ibv_gid gid{};
  gid.raw[10] = gid.raw[11] = 0xff;
  const uint32_t be = htobe32(ipv4);
  __builtin_memcpy(&gid.raw[12], &be, 4);
  return gid;
}
inline std::optional<uint32_t> ipv4_in_gid(const ibv_gid& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid.raw[i] != 0) return std::nullopt;
  if (gid.raw[10] != 0xff || gid.raw[11] != 0xff) return std::nullopt;
  uint32_t be = 0;
  __builtin_memcpy(&be, &gid.raw[12], 4);
  return be32toh(be);
}

// The node a GID of the address plan names (any of the forms above), or
// nullopt: a GID no simulated device has.
inline std::optional<FabricNode> node_of_gid(const ibv_gid& gid) {
  auto node = [](uint64_t member, uint64_t device_plus_one) -> std::optional<FabricNode> {
    if (device_plus_one == 0 || device_plus_one > kDevicesPerMember) return std::nullopt;
    return FabricNode{static_cast<uint32_t>(member), static_cast<int>(device_plus_one - 1)};
  };
  if (std::optional<uint32_t> ip = ipv4_in_gid(gid)) {
    if ((*ip >> 16) != (198u << 8 | 18u)) return std::nullopt;
    return node((*ip >> 8) & 0xff, *ip & 0xff);
  }
  if (be64toh(gid.global.subnet_prefix) != kLinkLocalPrefix) return std::nullopt;
  const uint64_t id = be64toh(gid.global.interface_id);
  if ((id & 0xffff'ffff'0000'0000ull) == 0x02fa'f100'0000'0000ull)  // ib_guid_of
    return node((id >> 16) & 0xffff, id & 0xffff);
  if ((id & 0xffff'ffff'ff00'0000ull) == 0x00fa'f1ff'fe00'0000ull)  // eui64_of
    return node((id >> 8) & 0xff, id & 0xff);
  return std::nullopt;
}

}  // namespace verbfault::sim

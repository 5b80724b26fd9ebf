// Where things are on the local fabric: which member's device a LID names,
// which QP numbers a member hands out. A pure function of the member index,
// so that a process started as member N (VERBFAULT_PROC=N) gets the same
// LIDs, GIDs and QP numbers in every run.
#pragma once

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

}  // namespace verbfault::sim

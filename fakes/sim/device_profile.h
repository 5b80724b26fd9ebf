// Device and port attributes reported by a simulated device.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace verbfault::sim {

// The attributes a simulated device reports through ibv_query_device(3) and
// ibv_query_port(3). The defaults are those of a current InfiniBand HCA, so
// that applications size their resources as they would in the field.
struct DeviceProfile {
  ibv_device_attr device{};
  ibv_port_attr port{};
  uint32_t max_inline_data = 256;  // bytes of IBV_SEND_INLINE payload per WR
  std::string fw_ver = "1.0.0";
  std::string board_id = "VERBFAULT_SIM";
  std::string hca_type = "vfsim";

  // The profile of the index-th simulated device of member `member` of the
  // local fabric: GUIDs and LIDs unique on the fabric (fabric_address.h).
  static DeviceProfile standard(int index, uint32_t member = 0);
};

}  // namespace verbfault::sim

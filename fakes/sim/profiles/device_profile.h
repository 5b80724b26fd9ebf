// What kind of HCA a simulated device is: the attributes it reports
// through ibv_query_device(3) and ibv_query_port(3), the entries of its GID
// table, and how it rounds the sizes an application asks for. Read from a
// YAML file (profile_file.h; the built-in ones are fakes/sim/profiles/*.yaml,
// compiled in) and chosen per device by VERBFAULT_SIM_PROFILE
// (profile_selection.h). The addresses (GUID, LID, MAC, IPv4) are not part
// of a profile: they are the fabric's (fabric_address.h), set when the
// device is made (Device).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace verbfault::sim {

// How a requested queue size becomes the size granted (ibv_create_cq(3):
// "the actual CQ size can be larger than requested"; ibv_create_qp(3) and
// ibv_create_srq(3): the granted values "may be greater").
enum class Rounding {
  kExact,               // what was asked
  kPowerOfTwo,          // the next 2^n >= asked
  kPowerOfTwoMinusOne,  // the next 2^n - 1 >= asked (rxe's and mlx5's CQs)
};
// `asked` rounded up by `rule`; 0 stays 0 (an absent queue).
uint64_t round_size(Rounding rule, uint64_t asked);

// The address a GID table entry holds (IBA 4.1.1; RoCE: the netdev's IP
// addresses, IBTA Annex A17.4.5).
enum class GidAddress {
  kLinkLocal,  // fe80::/64 and the port's interface identifier
  kIpv4,       // ::ffff:a.b.c.d, the port's IPv4 address (RoCE only)
};

struct GidSpec {
  GidAddress address = GidAddress::kLinkLocal;
  ibv_gid_type type = IBV_GID_TYPE_IB;
};

struct DeviceProfile {
  // The built-in name ("ib", "roce", "cx6") or the file it was read from.
  std::string name;
  ibv_device_attr device{};
  // lid and sm_lid are set by the device from the fabric's address plan
  // (0 on an Ethernet port: RoCE has no LIDs, IBTA A17.3).
  ibv_port_attr port{};
  uint32_t max_inline_data = 0;  // bytes of IBV_SEND_INLINE payload per WR
  std::string fw_ver;
  std::string board_id;
  std::string hca_type;
  // In index order; the rest of the gid_tbl_len entries are empty.
  std::vector<GidSpec> gids;
  Rounding cq_rounding = Rounding::kPowerOfTwoMinusOne;
  Rounding qp_wr_rounding = Rounding::kExact;
  Rounding srq_wr_rounding = Rounding::kExact;

  bool ethernet() const { return port.link_layer == IBV_LINK_LAYER_ETHERNET; }
};

}  // namespace verbfault::sim

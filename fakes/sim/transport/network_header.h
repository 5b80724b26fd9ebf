// The 40 bytes at the start of a UD receive buffer (ibv_post_recv(3):
// "the first 40 bytes of the buffer ... will contain the GRH"), as the port
// received them, and their reading back by ibv_init_ah_from_wc(3).
//
// InfiniBand and RoCE v1 (IBTA A16): the IB GRH (IBA 8.3), next header 0x1b.
// RoCE v2 (IBTA A17.4): the IP header in front of the UDP header: IPv6 when
// the GIDs are IPv6 addresses, the 40-byte IPv6 header in place of the GRH;
// IPv4 when they are IPv4-mapped, the 20-byte IPv4 header in bytes 20..39
// and 0 in bytes 0..19 (rxe_resp.c copies ip_hdr() behind 20 reserved
// bytes; mlx5 does the same, and libibverbs' ibv_init_ah_from_wc reads it
// there).
#pragma once

#include "transport.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <optional>

namespace verbfault::sim {

inline constexpr size_t kNetworkHeaderBytes = 40;
static_assert(sizeof(ibv_grh) == kNetworkHeaderBytes);

// What a UD message `m` addressed to `dgid` leaves in the receive buffer.
std::array<uint8_t, kNetworkHeaderBytes> network_header(const Message& m, const ibv_gid& dgid);

// What a RoCE port reports in ibv_wc.sl of a UD receive (a RoCE packet
// has no service level): the kind of network header the frame carried, as
// IBTA A17.4.5.1 wants the completion to say ("a flag that indicates if
// the received frame is an IPv4, IPv6 or RoCE packet") and as mlx5 writes
// it (roce_pkt_type of the CQE: bit 3 a UDP header, bits 2..0 the L3
// header: 0 GRH, 1 IPv6, 2 IPv4). UCX reads it there to find the
// destination address in the header (uct_ud_iface_check_grh). rxe leaves
// 0 (docs/device.md, the rxe table).
uint8_t roce_packet_type(const Message& m, const ibv_gid& dgid);

// A received header read back: the sender's GID (an IPv4 source rebuilt as
// ::ffff:a.b.c.d), the receiver's, and the routing fields; nullopt when the
// bytes are neither a GRH/IPv6 header nor an IPv4 header.
struct ReceivedHeader {
  bool roce_v2 = false;  // UDP follows (IPv4, or IPv6 next header 17)
  ibv_gid sgid{};
  ibv_gid dgid{};
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
};
std::optional<ReceivedHeader> read_network_header(const ibv_grh& header);

}  // namespace verbfault::sim

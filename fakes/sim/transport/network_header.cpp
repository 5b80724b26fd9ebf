#include "network_header.h"

#include "fabric_address.h"

#include <endian.h>

#include <cstring>

namespace verbfault::sim {

namespace {

constexpr uint8_t kNextHeaderIb = 0x1b;  // IBA 8.3.1: a BTH follows the GRH
constexpr uint8_t kProtocolUdp = 17;     // RFC 768; RoCE v2 is UDP port 4791
// What follows the IP header of a RoCE v2 UD SEND: UDP (8), BTH (12),
// DETH (8), the payload, immediate data (4) if any, and the ICRC (4).
constexpr uint32_t kUdpBytes = 8, kBthBytes = 12, kDethBytes = 8, kImmBytes = 4, kIcrcBytes = 4;

uint32_t roce_v2_payload_length(const Message& m) {
  const bool imm = m.opcode == IBV_WR_SEND_WITH_IMM;
  return kUdpBytes + kBthBytes + kDethBytes + static_cast<uint32_t>(m.length) +
         (imm ? kImmBytes : 0) + kIcrcBytes;
}

// RFC 791 3.1: the ones' complement of the ones' complement sum of the
// header's 16-bit words (the checksum field taken as 0).
uint16_t ipv4_checksum(const uint8_t* header) {
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uint32_t{header[i]} << 8 | header[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace

uint8_t roce_packet_type(const Message& m, const ibv_gid& dgid) {
  constexpr uint8_t kUdp = 0x8, kIpv6 = 0x1, kIpv4 = 0x2;
  if (m.sgid_type != IBV_GID_TYPE_ROCE_V2) return 0;  // RoCE v1: a GRH
  return ipv4_in_gid(m.sgid) && ipv4_in_gid(dgid) ? kUdp | kIpv4 : kUdp | kIpv6;
}

std::array<uint8_t, kNetworkHeaderBytes> network_header(const Message& m, const ibv_gid& dgid) {
  std::array<uint8_t, kNetworkHeaderBytes> out{};
  const ibv_global_route& grh = m.ah.grh;
  const std::optional<uint32_t> src4 = ipv4_in_gid(m.sgid), dst4 = ipv4_in_gid(dgid);
  if (m.sgid_type == IBV_GID_TYPE_ROCE_V2 && src4 && dst4) {
    // RFC 791 header in bytes 20..39; bytes 0..19 stay 0.
    uint8_t* ip = out.data() + 20;
    ip[0] = 0x45;  // version 4, IHL 5 words
    ip[1] = grh.traffic_class;
    const uint16_t total = static_cast<uint16_t>(20 + roce_v2_payload_length(m));
    ip[2] = static_cast<uint8_t>(total >> 8);
    ip[3] = static_cast<uint8_t>(total);
    // Identification 0, Don't Fragment (rxe_net.c prepare_ipv4_hdr sets DF).
    ip[6] = 0x40;
    ip[8] = grh.hop_limit;  // TTL
    ip[9] = kProtocolUdp;
    const uint32_t src = htobe32(*src4), dst = htobe32(*dst4);
    std::memcpy(ip + 12, &src, 4);
    std::memcpy(ip + 16, &dst, 4);
    const uint16_t check = ipv4_checksum(ip);
    ip[10] = static_cast<uint8_t>(check >> 8);
    ip[11] = static_cast<uint8_t>(check);
    return out;
  }
  // IPv6 (RFC 8200) and the IB GRH share one layout (struct ibv_grh).
  const bool v2 = m.sgid_type == IBV_GID_TYPE_ROCE_V2;
  ibv_grh header{};
  header.version_tclass_flow =
      htobe32((6u << 28) | (uint32_t{grh.traffic_class} << 20) | (grh.flow_label & 0xfffff));
  // The IB GRH's PayLen as the device always wrote it (the message's
  // bytes); an IPv6 payload length counts what follows the header.
  header.paylen = htobe16(static_cast<uint16_t>(v2 ? roce_v2_payload_length(m) : m.length));
  header.next_hdr = v2 ? kProtocolUdp : kNextHeaderIb;
  header.hop_limit = grh.hop_limit;
  header.sgid = m.sgid;
  header.dgid = dgid;
  std::memcpy(out.data(), &header, sizeof header);
  return out;
}

std::optional<ReceivedHeader> read_network_header(const ibv_grh& header) {
  ReceivedHeader r;
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&header);
  const uint32_t first = be32toh(header.version_tclass_flow);
  const uint8_t* ip = bytes + 20;
  // As libibverbs tells them apart: no IPv6 version in byte 0 and an IPv4
  // one in byte 20 is IPv4.
  if ((first >> 28) != 6) {
    if ((ip[0] >> 4) != 4 || (ip[0] & 0xf) != 5) return std::nullopt;
    r.roce_v2 = true;
    r.traffic_class = ip[1];
    uint32_t src = 0, dst = 0;
    std::memcpy(&src, ip + 12, 4);
    std::memcpy(&dst, ip + 16, 4);
    r.sgid = ipv4_mapped_gid(be32toh(src));
    r.dgid = ipv4_mapped_gid(be32toh(dst));
    return r;
  }
  r.roce_v2 = header.next_hdr == kProtocolUdp;
  r.traffic_class = static_cast<uint8_t>(first >> 20);
  r.flow_label = first & 0xfffff;
  r.sgid = header.sgid;
  r.dgid = header.dgid;
  return r;
}

}  // namespace verbfault::sim

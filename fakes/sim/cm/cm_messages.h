// The messages of the InfiniBand communication manager (IBA 12.6) that the
// simulated connection managers of a fabric exchange: what the kernel's
// ib_cm puts on the wire as MADs, reduced to what a peer's manager reads.
// Between processes they travel as one frame each (remote_frames.h,
// FrameKind::kConnectionManager); within one process they are handed over
// directly. Both ends run the same library on one host: a plain struct.
#pragma once

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include <cstdint>
#include <type_traits>

namespace verbfault::sim::cm {

enum class MessageKind : uint8_t {
  kReq,      // connect: the active side's REQ (IBA 12.6.5)
  kRep,      // the passive side's REP (12.6.8)
  kRtu,      // the active side's RTU (12.6.9)
  kRej,      // a reject, `reason` (12.6.7)
  kDreq,     // disconnect request (12.6.10)
  kDrep,     // disconnect reply (12.6.11)
  kSidrReq,  // a UD id's service ID resolution request (12.11.1)
  kSidrRep,  // its reply, `reason` the SIDR status (12.11.2)
  // Not a MAD: the sender's retries ran out without an answer (a REQ to a
  // member that does not run, or one a full backlog dropped): UNREACHABLE.
  kUnreachable,
};

// IBA table 112, the reasons ib_cm's users meet (enum ib_cm_rej_reason).
inline constexpr uint8_t kRejectTimeout = 4;
inline constexpr uint8_t kRejectInvalidServiceId = 8;
inline constexpr uint8_t kRejectConsumer = 28;
inline constexpr uint8_t kRejectVendorOptionNotSupported = 35;  // rdma_reject_ece
// IBA 12.11.2 SIDR REP status.
inline constexpr uint8_t kSidrUnsupported = 1;  // no listener on the service ID
inline constexpr uint8_t kSidrReject = 2;

// The private data each message carries on the wire (ib_cm.h
// IB_CM_*_PRIVATE_DATA_SIZE): what the receiver's event reports as its
// length whatever the sender wrote; the REQ's and SIDR REQ's first 36 bytes
// are the rdma_cm's own header (cma_hdr) for IP ids, so a user has 56 and
// 180 of them.
inline constexpr uint8_t kReqPrivateData = 92;
inline constexpr uint8_t kRepPrivateData = 196;
inline constexpr uint8_t kRejPrivateData = 148;
inline constexpr uint8_t kSidrReqPrivateData = 216;
inline constexpr uint8_t kSidrRepPrivateData = 136;
inline constexpr uint8_t kIpHeaderBytes = 36;

// The qkey of a UD id of the UDP and IB port spaces (RDMA_UDP_QKEY,
// cma_set_default_qkey): in the SIDR REP and in INIT_QP_ATTR.
inline constexpr uint32_t kDefaultQkey = 0x01234567;

// A node of the fabric as a message names it: which member, which of its
// devices, and the port's addresses, so that the receiver can address the
// sender's QP (its AV: LID on InfiniBand, GID on RoCE).
struct MessageNode {
  uint32_t member = 0;
  int32_t device = 0;
  uint16_t lid = 0;
  uint8_t reserved[6] = {};
  ibv_gid gid{};
};

struct Message {
  MessageKind kind = MessageKind::kReq;
  uint8_t reason = 0;  // REJ reason, SIDR REP status
  uint8_t private_data_len = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t flow_control = 0;
  uint8_t retry_count = 0;
  uint8_t rnr_retry_count = 0;
  uint8_t srq = 0;
  uint8_t qp_type = 0;  // REQ: the QP type asked (IBV_QPT_RC/UC)
  uint8_t path_mtu = 0;
  uint8_t reserved = 0;
  uint16_t port_space = 0;    // REQ/SIDR REQ: the service ID's port space...
  uint16_t service_port = 0;  // ...and port (rdma_get_service_id)
  uint32_t local_id = 0;      // the sender's id (its handle): the local comm ID
  uint32_t remote_id = 0;     // the receiver's id, once known (not in a REQ)
  uint32_t qp_num = 0;
  uint32_t starting_psn = 0;
  uint32_t qkey = 0;  // SIDR REP
  MessageNode sender;
  MessageNode target;
  // The rdma_cm header's addresses (cma_hdr): the active side's source and
  // the destination it asked for, ports included.
  sockaddr_storage source{};
  sockaddr_storage destination{};
  uint8_t private_data[kSidrReqPrivateData] = {};
};

static_assert(std::is_trivially_copyable_v<Message>);

}  // namespace verbfault::sim::cm

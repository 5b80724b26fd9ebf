// The frames the simulated devices of two processes exchange over the
// local fabric's wire (wire/endpoint.h): an RC/UC/UD request, and an RC
// response. Both processes run the same library on the same host, so the
// frames are plain structs in host byte order, versioned by kind.
#pragma once

#include "transport.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <type_traits>

namespace verbfault::sim::remote {

// kGaveUp: one byte, sent by a member whose wait for this one outlasted its
// grace period (fabric_wait.cpp). kLookAgain: one byte, sent by a member
// about to take the fabric for quiescent while this one's application
// threads all wait outside the device: they may wait on a socket it wrote
// to (fabric_wait.cpp, Fabric::begin_outside).
enum class FrameKind : uint8_t {
  kRequest = 0x51,
  kResponse = 0x52,
  kGaveUp = 0x53,
  kLookAgain = 0x54,
  // A connection manager's message (cm/cm_messages.h), after the kind byte.
  kConnectionManager = 0x55,
};

// How a request frame carries its SEND/WRITE payload: the bytes, or a
// description of where they lie in the requester's shared memory
// (remote_payload.h).
enum class PayloadFormat : uint8_t { kBytes = 0, kDescribed = 1 };

// ResponseFrame::flags.
inline constexpr uint8_t kPayloadUnresolved = 1;  // a reference could not be mapped

// A request: one WQE of the requester (transport.h's Request), addressed,
// followed by `length` bytes of SEND/WRITE payload (kBytes) or their
// description (kDescribed).
struct RequestFrame {
  FrameKind kind = FrameKind::kRequest;
  PayloadFormat payload_format = PayloadFormat::kBytes;
  uint16_t dlid = 0;
  uint32_t dst_qpn = 0;
  uint32_t psn = 0;  // RC: the request's packet sequence number (IBA 9.7.1)
  uint64_t length = 0;
  Request request;
};

// What an RC responder answered (transport.h Response), followed by
// `length` bytes of RDMA READ data.
struct ResponseFrame {
  FrameKind kind = FrameKind::kResponse;
  uint8_t response = 0;
  uint8_t min_rnr_timer = 0;  // an RNR NAK carries the responder's timer
  uint8_t flags = 0;
  uint32_t qpn = 0;  // the requester's QP
  uint32_t psn = 0;  // of the request answered
  uint32_t reserved2 = 0;
  uint64_t original = 0;  // atomics: the target's value before
  uint64_t length = 0;
};

static_assert(std::is_trivially_copyable_v<RequestFrame>);
static_assert(std::is_trivially_copyable_v<ResponseFrame>);

}  // namespace verbfault::sim::remote

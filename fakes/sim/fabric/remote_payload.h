// The payload of a request frame by reference: where the requester's
// bytes lie in its shared memory (shared_memory.h) instead of the bytes,
// so that the target's responder copies them once, from a mapping of the
// requester's memory into its own (docs/local-fabric.md, "Payload by
// reference").
//
// When: RC only, since the requester's buffer stays untouched until the
// WQE completes, which is after the answer, which is after the copy
// (ibv_post_send(3): the buffer may not be reused before the completion).
// UC and UD complete when sent, so their bytes travel in the frame. A
// payload of at least kMinDescribedBytes of which some lies in a
// segment is described piece by piece: a part in a segment as a
// reference, anything else (a partial first or last page, memory that
// could not be shared, an inline WQE) as bytes in the frame after the
// description. A target that cannot map a reference answers "no answer"
// with kPayloadUnresolved: the requester stops describing payloads to that
// member, and the transport timer's retry sends the bytes.
//
// Layout after the RequestFrame (payload_format kDescribed): a
// DescribedPayload, `pieces` PieceEntry, then the bytes of the entries
// in_frame, in order. Both processes run the same library: host order.
#pragma once

#include "memory_access.h"
#include "remote_frames.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <span>

namespace verbfault::sim::remote_payload {

using Bytes = std::span<const uint8_t>;
using remote::PayloadFormat;
using remote::RequestFrame;

inline constexpr uint64_t kMinDescribedBytes = 1024;

struct DescribedPayload {
  int32_t pid = 0;  // the requester's process, whose descriptors the entries name
  uint32_t pieces = 0;
};

// No default values: an Outgoing leaves its entries unset until used.
struct PieceEntry {
  uint64_t length;
  uint64_t segment;  // 0: the bytes are in the frame
  uint64_t offset;
  int32_t fd;
  uint32_t reserved;
};
static_assert(std::is_trivial_v<PieceEntry>);

// The requester's side: a payload, described when the rules allow.
// Lives on the stack of send_request: allocates nothing, and sets up its
// arrays only for a payload it describes (a small SEND pays nothing).
class Outgoing {
 public:
  static constexpr std::size_t kMaxEntries = 64;
  Outgoing() : none_() {}
  ~Outgoing() {}
  Outgoing(const Outgoing&) = delete;
  Outgoing& operator=(const Outgoing&) = delete;

  // Describes `payload` (of a request of a QP of `type` to `member`) if
  // the rules above allow. False: send the bytes.
  bool describe(ibv_qp_type type, uint32_t member, std::span<const Source> payload);
  // The whole frame: `header` (the RequestFrame), the description and
  // the bytes in the frame.
  std::span<const Bytes> parts(Bytes header);

 private:
  struct Storage {
    DescribedPayload described;
    PieceEntry entries[kMaxEntries];
    Bytes parts[3 + kMaxEntries];  // frame, description, entries, bytes in the frame
    std::size_t in_frame;
  };
  static_assert(std::is_trivially_destructible_v<Storage>);
  union {
    char none_;
    Storage s_;
  };
};

// The target's side: the pieces of a received payload, over the frame's
// bytes and mappings of the requester's segments.
class Incoming {
 public:
  enum class Status { kOk, kMalformed, kUnresolved };
  // `rest`: the frame after its RequestFrame.
  Status decode(uint32_t from, const RequestFrame& frame, Bytes rest);
  std::span<const Source> pieces() const { return pieces_.view(); }

 private:
  Pieces<Source> pieces_;
};

// Whether a frame's `rest` (after the RequestFrame) can hold its payload
// (the full check is Incoming::decode).
bool fits(const RequestFrame& frame, std::size_t rest);

// A target answered that it could not map our references: no more of
// them to that member (until it is gone).
void stop_describing_to(uint32_t member);
// `member` is gone: its mappings unmapped, and a new holder of its index
// gets described payloads again.
void forget(uint32_t member);

}  // namespace verbfault::sim::remote_payload

// Work queue elements: what the device keeps of a posted work request.
#pragma once

#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <type_traits>
#include <vector>

namespace verbfault::sim {

// Whether a WR's SGE list may be read: num_sge within the queue's limit
// (max_send_sge, max_recv_sge, an SRQ's max_sge; ibv_post_send(3),
// ibv_post_recv(3), ibv_post_srq_recv(3): EINVAL) and an sg_list to read
// when num_sge > 0. Checked before sg_list is touched: the application's
// array may be shorter than a bad num_sge says. rdma-core providers read a
// NULL sg_list and crash; the device refuses it with EINVAL instead.
inline bool sge_count_fits(int num_sge, const ibv_sge* sg_list, uint32_t max_sge) {
  if (num_sge < 0 || static_cast<uint32_t>(num_sge) > max_sge) return false;
  return num_sge == 0 || sg_list != nullptr;
}

// The value of an enum field the application filled in, as its underlying
// integer: loading one that is none of the enumerators as the enum type is
// undefined behaviour (an opcode of 0x7f, a qp_state of 99). The device
// compares it with the enumerators before it converts it.
template <class Enum>
std::underlying_type_t<Enum> raw_value(const Enum& field) {
  std::underlying_type_t<Enum> value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

// A WR's scatter/gather list, copied at post time: up to kInline entries
// in place (no allocation per post for the usual one or two SGEs), more on
// the heap.
class SgeList {
 public:
  static constexpr std::size_t kInline = 4;
  void assign(const ibv_sge* first, const ibv_sge* last) {
    size_ = static_cast<std::size_t>(last - first);
    if (size_ <= kInline)
      std::copy(first, last, in_place_.begin());
    else
      on_heap_.assign(first, last);
  }
  const ibv_sge* data() const { return size_ <= kInline ? in_place_.data() : on_heap_.data(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const ibv_sge* begin() const { return data(); }
  const ibv_sge* end() const { return data() + size_; }
  operator std::span<const ibv_sge>() const { return {data(), size_}; }

 private:
  std::array<ibv_sge, kInline> in_place_;
  std::vector<ibv_sge> on_heap_;
  std::size_t size_ = 0;
};

// A send WR as the device holds it after ibv_post_send(3) returned: the
// application may reuse its ibv_send_wr and, for IBV_SEND_INLINE, its
// buffers at once, so everything is copied.
struct SendWqe {
  uint64_t seq = 0;  // position in the send queue; slots are reclaimed by seq
  uint64_t wr_id = 0;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  unsigned int send_flags = 0;
  bool signaled = false;
  __be32 imm_data = 0;
  SgeList sges;                      // local buffers (not used when inline)
  std::vector<uint8_t> inline_data;  // IBV_SEND_INLINE payload
  uint64_t remote_addr = 0;
  // RDMA and atomics: the target's key. IBV_WR_BIND_MW: the window's new
  // rkey (its key byte counts); IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV: the
  // rkey to invalidate (ibv_post_send(3) invalidate_rkey).
  uint32_t rkey = 0;
  // IBV_WR_BIND_MW (memory_window.h): the window by its rkey at post time
  // and the region by its lkey (0: none), so that either being freed
  // before the WQE runs is seen; the range and access of the binding.
  uint32_t mw_rkey = 0;
  uint32_t bind_lkey = 0;
  uint64_t bind_addr = 0;
  uint64_t bind_length = 0;
  unsigned int bind_access = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // UD addressing, copied from the AH at post time.
  ibv_ah_attr ah{};
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  uint64_t length = 0;  // total payload bytes

  // A condition the fault engine brought about for this WR
  // (conditions.h, post_send_with_failures): the fabric answers it with RNR
  // NAKs, or not at all, until the requester gives up.
  enum class Forced : uint8_t { kNone, kRnrNak, kNoAnswer };
  Forced forced = Forced::kNone;

  // Retry state of the requester (IBA 9.7.5.2.8 RNR, 9.7.6.1.3 timeout).
  int rnr_retries_done = 0;
  int transport_retries_done = 0;
  uint64_t not_before_ns = 0;  // virtual time of the next attempt
  bool waiting = false;        // NAKed or unanswered: retry at not_before_ns
  // RC to another process (remote.h): sent and not answered yet, and the
  // PSN it was first sent with (a retry resends the same PSN).
  bool in_flight = false;
  bool has_psn = false;
  uint32_t psn = 0;
};

// A receive WR on a QP's receive queue or on an SRQ.
struct RecvWqe {
  uint64_t wr_id = 0;
  SgeList sges;
  uint64_t capacity = 0;  // sum of the SGE lengths
};

// The work requests built between ibv_wr_start and ibv_wr_complete (the
// ibv_wr_* API, extended_qp.cpp): posted all together, or none of them.
struct WrBatch {
  bool open = false;                      // inside ibv_wr_start .. complete/abort
  int error = 0;                          // a builder or setter was misused: complete fails with it
  std::deque<ibv_send_wr> wrs;            // deques: stable addresses
  std::deque<std::vector<ibv_sge>> sges;  // wrs[i]'s SGE list
  std::deque<std::vector<uint8_t>> inlined;  // wrs[i]'s inline payload
};

}  // namespace verbfault::sim

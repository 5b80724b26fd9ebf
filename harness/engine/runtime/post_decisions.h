// The fault decisions for posted work requests, shared by ibv_post_send /
// ibv_post_recv / ibv_post_srq_recv and the batches of the ibv_wr_* API
// (the interposer's trampolines): each WR is one opportunity, in posting
// order.
#pragma once

#include "conditions.h"
#include "fault_engine.h"
#include "verbfault/plan.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace verbfault::engine {

// What the hooks decided for the work requests of one post.
struct PostPlan {
  std::size_t stop = SIZE_MAX;              // index of the WR that fails or flushes
  int error = 0;                            // verb_failure: the errno
  bool flush = false;                       // flush: the QP goes to ERR before WR `stop`
  std::vector<std::size_t> force_signaled;  // doomed unsignaled send WRs
  // Cause level (a simulated QP, ibv_post_send): the device itself answers
  // these WRs with RNR NAKs or not at all (provider::post_send_with_failures).
  std::vector<std::pair<std::size_t, provider::SendFailure>> caused;
  // cm_disconnect: besides the flush, the peer of this rdma_cm id (its
  // registry key) is gone (interposer/cm_faults.h peer_gone).
  const void* cm_disconnect = nullptr;
};

// What the decision needs to know of one WR.
struct PostedWr {
  std::uint64_t wr_id = 0;
  Side side = Side::send;
  std::optional<Opcode> opcode;
  unsigned send_flags = 0;
};

// Decides WR number `index` of a post on `object` (a QP, or an SRQ with
// `qp` null) and records the fault it gets, if any (lock held). Call it
// only while plan.stop is unset. `can_cause`: the post can hand the device
// fabric conditions (plan.caused) for the retry exhaustion kinds.
void decide_wr(FaultEngine& engine, const record::Object& object, const record::Object* qp,
               Verb verb, const PostedWr& wr, std::size_t index, PostPlan& plan,
               bool can_cause = false);

}  // namespace verbfault::engine

// A receive queue: the receive WRs posted and not yet consumed, and their
// slots. A QP's own queue and an SRQ's are this one type; what differs
// stays with the owner (the QP's state checks and its flush in ERR, the
// SRQ's limit event).
#pragma once

#include "ring.h"
#include "work_request.h"

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbfault::sim {

// Guarded by Fabric::mutex, as its owner.
class ReceiveQueue {
 public:
  // ibv_post_recv(3), ibv_post_srq_recv(3): queues the WRs of the list in
  // order, up to the first that cannot be: more SGEs than `max_sge`
  // (EINVAL), or `max_wr` slots taken (ENOMEM: a slot frees when its
  // completion is polled). *bad_wr names that one; those before it stay
  // posted.
  int post(ibv_recv_wr* wr, ibv_recv_wr** bad_wr, std::uint32_t max_wr, std::uint32_t max_sge);

  // Posted WRs not yet consumed by a message, oldest first.
  Ring<RecvWqe>& wqes() { return wqes_; }
  const Ring<RecvWqe>& wqes() const { return wqes_; }
  // A completion of one of its WRs was polled: its slot is free again.
  void release_slot() {
    if (occupied_ > 0) --occupied_;
  }
  // Everything dropped, every slot free (a QP's modify to RESET).
  void clear() {
    wqes_.clear();
    occupied_ = 0;
  }

 private:
  Ring<RecvWqe> wqes_;
  std::uint32_t occupied_ = 0;  // posted and not yet polled
};

}  // namespace verbfault::sim

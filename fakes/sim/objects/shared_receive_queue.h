// ibv_srq: receive WRs shared by several QPs.
#pragma once

#include "handle.h"
#include "receive_queue.h"

#include <infiniband/verbs.h>

#include <optional>

namespace verbfault::sim {

class ProtectionDomain;

// Guarded by Fabric::mutex.
class SharedReceiveQueue {
 public:
  SharedReceiveQueue(ProtectionDomain& pd, const ibv_srq_attr& attr);

  ibv_srq* verbs() { return &handle_.verbs; }
  static SharedReceiveQueue* from(ibv_srq* srq) {
    return owner_of<SharedReceiveQueue, ibv_srq>(srq);
  }
  ProtectionDomain& pd() { return pd_; }
  ibv_srq_attr& attr() { return attr_; }

  int post(ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
  // Takes the oldest receive WR for an incoming message. Raises
  // IBV_EVENT_SRQ_LIMIT_REACHED when the queue drops below an armed limit.
  std::optional<RecvWqe> take();
  bool empty() const { return queue_.wqes().empty(); }
  // Every WR still queued (for a flush when the SRQ goes into error).
  Ring<RecvWqe>& queue() { return queue_.wqes(); }
  void release_slot() { queue_.release_slot(); }

  int attached_qps = 0;          // ibv_destroy_srq(3): EBUSY while a QP uses it
  uint32_t events_reported = 0;  // async events handed out for this SRQ

 private:
  Handle<ibv_srq, SharedReceiveQueue> handle_;
  ProtectionDomain& pd_;
  ibv_srq_attr attr_;
  ReceiveQueue queue_;
};

}  // namespace verbfault::sim

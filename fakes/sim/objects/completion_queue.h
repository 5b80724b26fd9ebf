// ibv_cq: a completion queue.
#pragma once

#include "completion.h"
#include "delivery.h"
#include "handle.h"
#include "ring.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>

namespace verbfault::sim {

class CompletionChannel;
class Context;

// Guarded by Fabric::mutex.
class CompletionQueue {
 public:
  CompletionQueue(Context& context, int capacity, void* cq_context, CompletionChannel* channel);
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  ibv_cq* verbs() { return reinterpret_cast<ibv_cq*>(&handle_.verbs); }
  static CompletionQueue* from(ibv_cq* cq) { return owner_of<CompletionQueue, ibv_cq_ex>(cq); }
  Context& context() { return context_; }
  CompletionChannel* channel() { return channel_; }
  int capacity() const { return capacity_; }
  size_t size() const { return entries_.size(); }
  bool in_error() const { return in_error_; }

  // Adds a completion; raises a completion event if the CQ is armed for it
  // (ibv_req_notify_cq(3)). Returns false when the CQ overflowed.
  bool push(const Completion& completion);
  // Hands out min(n, held) completions (ibv_poll_cq(3)), releasing their
  // work-queue slots: each work queue's completions in order; the order
  // across work queues entered in one step as the Freedoms draw.
  int poll(int n, ibv_wc* wc);
  // Arming a CQ that still holds completions may fire an event at once
  // (Freedoms); one with a held delivery that completes fires at once (the
  // delivery counts as arriving after the arm).
  void arm(bool solicited_only);

  // Deliveries from other processes (delivery.h). hold() keeps one back:
  // a completion counts against the capacity at once (the CQE is written
  // when the frame arrives, as on hardware, so an overflow is raised then:
  // false) and an armed CQ fires its event at once for one that completes.
  // reveal_next() applies the oldest: a completion becomes pollable, an
  // answer goes to its requester (which may complete into any CQ), without
  // a second event for what hold() announced. False when none is held.
  // `answers_only`: the oldest answer, passing receive completions held
  // before it (see awaiting_answers()).
  bool hold(Delivery delivery);
  bool reveal_next(bool answers_only = false);
  bool has_held() const { return !held_.empty(); }
  bool has_held_answer() const { return held_.size() > held_completions_; }
  // Whether a QP completing its sends here has a request in flight to
  // another process, whose answer is bound to come (that process's HCA
  // answers without its application) and goes before any receive
  // completion in this CQ: the answers to one process's requests and the
  // requests of its peer race on the wire (the peer's service thread
  // answers while its application sends), so arrival order between the
  // two is not a function of the seed, while "answers first" is.
  bool awaiting_answers() const;
  // Raises the completion event an armed CQ owes, without a completion
  // (the spurious event of ibv_get_cq_event(3)); false when not armed.
  bool fire_spurious_event();
  int resize(int capacity);
  // A QP or SRQ being destroyed: its completions stay pollable but no
  // longer refer to it.
  void forget(const QueuePair* qp);
  void forget(const SharedReceiveQueue* srq);
  // A QP moved to RESET: its completions and held deliveries leave the CQ
  // (rdma-core's mlx4 and mlx5 providers clean the CQs of a QP reset, so
  // that a QP brought back to RTS starts afresh; an SRQ slot of a removed
  // receive completion is freed, as mlx5_cq_clean frees its WQE).
  void remove(QueuePair& qp);
  void enter_error() { in_error_ = true; }

  // The completion the extended poll API (extended_cq.h) made current;
  // owned by the application between ibv_start_poll and ibv_end_poll.
  ibv_wc ex_current{};

  // Completions polled since a poll last found nothing visible, or since
  // deliveries were last revealed among visible ones; whether the last
  // such reveal found its delivery (fabric_poll.cpp).
  std::uint64_t polled_without_reveal = 0;
  bool deliveries_streaming = false;

  int attached_queues = 0;       // QPs using this CQ: destroy is EBUSY while > 0
  uint32_t events_reported = 0;  // events handed out by ibv_get_cq_event
  uint32_t events_acked = 0;     // ibv_ack_cq_events
  uint32_t async_events_reported = 0;
  uint32_t async_events_acked = 0;

 private:
  enum class Arm { kNone, kNextCompletion, kSolicited };

  Handle<ibv_cq_ex, CompletionQueue> handle_;
  Context& context_;
  CompletionChannel* channel_;
  int capacity_;
  Ring<Completion> entries_;
  // Held deliveries, oldest first, and how many of them are completions.
  std::deque<Delivery> held_;
  std::size_t held_completions_ = 0;
  // While reveal_next() applies a delivery: its event was raised by hold()
  // or arm() already.
  bool revealing_ = false;
  bool fires_for(bool solicited, bool success) const;
  bool fires_for(const Delivery& delivery) const;
  // Index into entries_ of the completion polled next.
  std::size_t pick_next();

  Arm arm_ = Arm::kNone;
  bool in_error_ = false;
  // The CQ's ordinal and counters in the Freedoms' draws.
  std::uint32_t freedom_ordinal_;
  std::uint64_t polls_ = 0;
  std::uint64_t picks_ = 0;
  std::uint64_t arms_ = 0;
  std::uint64_t pushed_ = 0;  // VERBFAULT_BROKEN_DEVICE builds only
};

}  // namespace verbfault::sim

// ibv_cq: a completion queue.
#pragma once

#include "completion.h"
#include "handle.h"
#include "ring.h"

#include <infiniband/verbs.h>

#include <cstdint>

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
  // (Freedoms).
  void arm(bool solicited_only);
  // Raises the completion event an armed CQ owes, without a completion
  // (the spurious event of ibv_get_cq_event(3)); false when not armed.
  bool fire_spurious_event();
  int resize(int capacity);
  // A QP or SRQ being destroyed: its completions stay pollable but no
  // longer refer to it.
  void forget(const QueuePair* qp);
  void forget(const SharedReceiveQueue* srq);
  void enter_error() { in_error_ = true; }

  // The completion the extended poll API (extended_cq.h) made current;
  // owned by the application between ibv_start_poll and ibv_end_poll.
  ibv_wc ex_current{};

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

#include "completion_queue.h"

#include "broken_device.h"
#include "completion_channel.h"
#include "context.h"
#include "fabric.h"
#include "invariant.h"
#include "queue_pair.h"
#include "shared_receive_queue.h"
#include "transport.h"

#include <array>
#include <cerrno>
#include <random>

namespace verbfault::sim {

CompletionQueue::CompletionQueue(Context& context, int capacity, void* cq_context,
                                 CompletionChannel* channel)
    : context_(context),
      channel_(channel),
      capacity_(capacity),
      freedom_ordinal_(context_.fabric().freedoms().next_cq()) {
  handle_.owner = this;
  ibv_cq_ex& cq = handle_.verbs;
  cq.context = context.verbs();
  cq.channel = channel ? channel->verbs() : nullptr;
  cq.cq_context = cq_context;
  cq.cqe = capacity;
  pthread_mutex_init(&cq.mutex, nullptr);
  pthread_cond_init(&cq.cond, nullptr);
}

CompletionQueue::~CompletionQueue() {
  pthread_cond_destroy(&handle_.verbs.cond);
  pthread_mutex_destroy(&handle_.verbs.mutex);
}

bool CompletionQueue::push(const Completion& completion) {
  if (in_error_) return false;
#ifdef VERBFAULT_BROKEN_DEVICE
  if (broken("drop_completion") && ++pushed_ % 5 == 0) return true;
  if (broken("unarmed_event") && channel_ != nullptr && arm_ == Arm::kNone) {
    entries_.push_back(completion);
    channel_->notify(this);
    return true;
  }
#endif
  if (context_.fabric().holding_deliveries()) {
    // Made by a frame from another process: held until revealed.
    Delivery delivery;
    delivery.completion = completion;
    return hold(std::move(delivery));
  }
  if (static_cast<int>(entries_.size() + held_completions_) >= capacity_) {
    // ibv_create_cq(3): the CQ overflowed; the caller raises the events.
    in_error_ = true;
    return false;
  }
  entries_.push_back(completion);
  VERBFAULT_ASSERT(static_cast<int>(entries_.size() + held_completions_) <= capacity_,
                   "a CQ holds at most cqe completions (ibv_create_cq(3): beyond, it overflows)");
  entries_.back().step = context_.fabric().step();
  if (!revealing_ && fires_for(completion.solicited, completion.wc.status == IBV_WC_SUCCESS) &&
      channel_ != nullptr) {
    arm_ = Arm::kNone;
    channel_->notify(this);
  }
  return true;
}

// IBA 11.4.2.2: an armed CQ raises one event for the next completion, or
// with solicited_only for the next solicited or unsuccessful one.
bool CompletionQueue::fires_for(bool solicited, bool success) const {
  return arm_ == Arm::kNextCompletion || (arm_ == Arm::kSolicited && (solicited || !success));
}

bool CompletionQueue::fires_for(const Delivery& delivery) const {
  if (!delivery.completes) return false;
  // An answer's completion is a send one: a solicited-only arm fires for it
  // only when it is an error.
  if (delivery.kind == Delivery::Kind::kAnswer)
    return fires_for(false, delivery.response == Response::kAck);
  return fires_for(delivery.completion.solicited, delivery.completion.wc.status == IBV_WC_SUCCESS);
}

bool CompletionQueue::hold(Delivery delivery) {
  if (in_error_) return false;
  const bool is_completion = delivery.kind == Delivery::Kind::kCompletion;
  if (is_completion) {
    if (static_cast<int>(entries_.size() + held_completions_) >= capacity_) {
      in_error_ = true;
      return false;
    }
    ++held_completions_;
  }
  const bool fire = fires_for(delivery) && channel_ != nullptr;
  held_.push_back(std::move(delivery));
  if (fire) {
    arm_ = Arm::kNone;
    channel_->notify(this);
  }
  return true;
}

bool CompletionQueue::awaiting_answers() const {
  for (auto& [qp, owned] : context_.qps)
    if (&qp->send_cq() == this &&
        (qp->held_answers > 0 || (!qp->send_queue().empty() && qp->send_queue().front().in_flight)))
      return true;
  return false;
}

bool CompletionQueue::reveal_next(bool answers_only) {
  if (held_.empty() || in_error_) return false;
  auto at = held_.begin();
  if (answers_only)
    while (at != held_.end() && at->kind != Delivery::Kind::kAnswer) ++at;
  if (at == held_.end()) return false;
  Delivery delivery = std::move(*at);
  held_.erase(at);
  // Its event was raised when it was held, or at the arm since: not again.
  revealing_ = delivery.completes;
  if (delivery.kind == Delivery::Kind::kCompletion) {
    --held_completions_;
    entries_.push_back(delivery.completion);
    entries_.back().step = context_.fabric().step();
  } else if (QueuePair* qp = context_.fabric().find_qp(delivery.qpn)) {
    if (qp->held_answers > 0) --qp->held_answers;
    requester::apply_answer(*qp, delivery);
  }
  revealing_ = false;
  return true;
}

std::size_t CompletionQueue::pick_next() {
  const Freedoms& freedoms = context_.fabric().freedoms();
  if (!freedoms.drawn()) return 0;
  if (entries_.size() == 1) {
    ++picks_;  // counted as a pick with one choice (no draw), as below
    return 0;
  }
  // Candidates: the oldest completion of each work queue among those that
  // entered in the same step as the oldest of all (a short window: the
  // choice is among completions racing to the CQ, not the whole backlog).
  // A flush is no candidate while a completion of its QP that is not a
  // flush precedes it: the flushes exist because the QP entered ERR, after
  // whatever it completed before (IBA 10.8.3.3), the error among it.
  constexpr std::size_t kWindow = 16;
  auto work_queue = [](const Completion& c) { return std::pair(c.wc.qp_num, c.send_queue); };
  auto flush = [](const Completion& c) { return c.wc.status == IBV_WC_WR_FLUSH_ERR; };
  std::array<std::size_t, kWindow> candidates;  // on the stack: polls allocate nothing
  std::size_t count = 0;
  for (std::size_t i = 0; i < entries_.size() && i < kWindow; ++i) {
    if (entries_[i].step != entries_.front().step) break;
    bool may_go_first = true;
    for (std::size_t j = 0; j < i && may_go_first; ++j) {
      if (work_queue(entries_[j]) == work_queue(entries_[i])) may_go_first = false;
      if (flush(entries_[i]) && !flush(entries_[j]) &&
          entries_[j].wc.qp_num == entries_[i].wc.qp_num)
        may_go_first = false;
    }
    if (may_go_first) candidates[count++] = i;
  }
  return candidates[freedoms.next_completion(freedom_ordinal_, ++picks_, count)];
}

int CompletionQueue::poll(int n, ibv_wc* wc) {
  if (in_error_) return -EIO;
  const Freedoms& freedoms = context_.fabric().freedoms();
  if (n > 0 && !entries_.empty())
    n = freedoms.poll_count(freedom_ordinal_, ++polls_, n, static_cast<int>(entries_.size()));
#ifdef VERBFAULT_BROKEN_DEVICE
  if (broken("random_poll") && n > 1) n = 1 + static_cast<int>(std::random_device{}() % n);
#endif
  int polled = 0;
  while (polled < n && !entries_.empty()) {
    const std::size_t at = pick_next();
    Completion& c = entries_[at];
    wc[polled++] = c.wc;
    if (c.qp != nullptr) {
      if (c.send_queue)
        c.qp->release_send_slots(c.sq_seq);
      else if (c.srq == nullptr)
        c.qp->release_recv_slot();
    }
    if (c.srq != nullptr) c.srq->release_slot();
    entries_.erase(at);
  }
  return polled;
}

bool CompletionQueue::fire_spurious_event() {
  if (arm_ == Arm::kNone || channel_ == nullptr || in_error_) return false;
  arm_ = Arm::kNone;
  channel_->notify(this);
  return true;
}

void CompletionQueue::arm(bool solicited_only) {
  // A later plain request widens a pending solicited-only one, never the
  // reverse (IBA 11.4.2.2).
  if (!solicited_only)
    arm_ = Arm::kNextCompletion;
  else if (arm_ == Arm::kNone)
    arm_ = Arm::kSolicited;
  if (!entries_.empty() && context_.fabric().freedoms().event_on_arm(freedom_ordinal_, ++arms_))
    fire_spurious_event();
  for (const Delivery& held : held_)
    if (fires_for(held) && fire_spurious_event()) break;
}

int CompletionQueue::resize(int capacity) {
  if (capacity < static_cast<int>(entries_.size() + held_completions_)) return EINVAL;
  capacity_ = capacity;
  handle_.verbs.cqe = capacity;
  return 0;
}

void CompletionQueue::forget(const QueuePair* qp) {
  for (Completion& c : entries_)
    if (c.qp == qp) c.qp = nullptr;
  for (Delivery& d : held_)
    if (d.completion.qp == qp) d.completion.qp = nullptr;
}

void CompletionQueue::remove(QueuePair& qp) {
  for (std::size_t i = 0; i < entries_.size();) {
    if (entries_[i].qp != &qp) {
      ++i;
      continue;
    }
    if (entries_[i].srq != nullptr) entries_[i].srq->release_slot();
    entries_.erase(i);
  }
  for (auto at = held_.begin(); at != held_.end();) {
    const bool completion = at->kind == Delivery::Kind::kCompletion;
    if (completion ? at->completion.qp != &qp : at->qpn != qp.qpn()) {
      ++at;
      continue;
    }
    if (completion) {
      --held_completions_;
      if (at->completion.srq != nullptr) at->completion.srq->release_slot();
    } else if (qp.held_answers > 0) {
      --qp.held_answers;
    }
    at = held_.erase(at);
  }
}

void CompletionQueue::forget(const SharedReceiveQueue* srq) {
  for (Completion& c : entries_)
    if (c.srq == srq) c.srq = nullptr;
  for (Delivery& d : held_)
    if (d.completion.srq == srq) d.completion.srq = nullptr;
}

}  // namespace verbfault::sim

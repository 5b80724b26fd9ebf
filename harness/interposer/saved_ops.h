// The provider's own fast-path ops of each wrapped context, saved before
// the trampolines replace them in context->ops.
//
// Lock-free lookup for the fast path: a fixed table of slots; a slot's ops
// are written before its context pointer is published (release), and read
// after the pointer is seen (acquire). Slots are never reused while their
// context is open.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>

namespace verbfault::interposer {

struct FastPathOps {
  decltype(ibv_context_ops::poll_cq) poll_cq;
  decltype(ibv_context_ops::req_notify_cq) req_notify_cq;
  decltype(ibv_context_ops::post_send) post_send;
  decltype(ibv_context_ops::post_recv) post_recv;
  decltype(ibv_context_ops::post_srq_recv) post_srq_recv;
  // verbs.h's ibv_query_port() is inline and calls this op when the
  // context has it (every libibverbs context does); null otherwise.
  decltype(verbs_context::query_port) query_port;
  // ibv_create_cq_ex() is inline too; null when the provider has none.
  decltype(verbs_context::create_cq_ex) create_cq_ex;
  // ibv_create_qp_ex() likewise, for any comp_mask beyond the PD.
  decltype(verbs_context::create_qp_ex) create_qp_ex;
};

// Saves `context`'s current ops; false when every slot is taken.
bool save_ops(ibv_context* context);
void forget_ops(const ibv_context* context);

namespace saved {
inline constexpr std::size_t kSlots = 256;
struct Slot {
  std::atomic<const ibv_context*> context{nullptr};
  FastPathOps ops{};
};
extern Slot slots[kSlots];
// A slot's context while save_ops fills it: not a context.
inline const ibv_context* const kClaimed =
    reinterpret_cast<const ibv_context*>(alignof(ibv_context));
// Whether `context` (a slot's) is a published context.
inline bool published(const ibv_context* context) {
  return context != nullptr && context != kClaimed;
}
}  // namespace saved

// The saved ops of a wrapped context (never null for one). Inline: every
// trampoline starts here, with the harness on or off.
inline const FastPathOps* saved_ops(const ibv_context* context) {
  for (saved::Slot& slot : saved::slots)
    if (slot.context.load(std::memory_order_acquire) == context) [[likely]]
      return &slot.ops;
  return nullptr;
}

}  // namespace verbfault::interposer

#include "saved_ops.h"

#include <atomic>
#include <cstddef>

namespace verbfault::interposer {

namespace saved {
Slot slots[kSlots];
}  // namespace saved

using saved::Slot;
using saved::slots;

bool save_ops(ibv_context* context) {
  // Claim a free slot, fill it, then publish the context.
  for (Slot& slot : slots) {
    const ibv_context* expected = nullptr;
    if (!slot.context.compare_exchange_strong(expected, saved::kClaimed, std::memory_order_acquire))
      continue;
    const ibv_context_ops& ops = context->ops;
    verbs_context* with_query_port = verbs_get_ctx_op(context, query_port);
    verbs_context* with_create_cq_ex = verbs_get_ctx_op(context, create_cq_ex);
    verbs_context* with_create_qp_ex = verbs_get_ctx_op(context, create_qp_ex);
    slot.ops = {ops.poll_cq,
                ops.req_notify_cq,
                ops.post_send,
                ops.post_recv,
                ops.post_srq_recv,
                with_query_port != nullptr ? with_query_port->query_port : nullptr,
                with_create_cq_ex != nullptr ? with_create_cq_ex->create_cq_ex : nullptr,
                with_create_qp_ex != nullptr ? with_create_qp_ex->create_qp_ex : nullptr};
    slot.context.store(context, std::memory_order_release);
    return true;
  }
  return false;
}

void forget_ops(const ibv_context* context) {
  for (Slot& slot : slots)
    if (slot.context.load(std::memory_order_acquire) == context) {
      slot.context.store(nullptr, std::memory_order_release);
      return;
    }
}

}  // namespace verbfault::interposer

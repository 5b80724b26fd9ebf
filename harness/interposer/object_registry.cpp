#include "object_registry.h"

#include <algorithm>

namespace verbfault::interposer {

Tracked& ObjectRegistry::add(ObjectKind kind, const void* handle, ObjectRef context,
                             bool simulated) {
  forget_recent();
  std::uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Tracked& tracked = slots_[slot] = Tracked{};
  tracked.slot = slot;
  tracked.ref = {kind, next_index_[static_cast<std::size_t>(kind)]++};
  tracked.handle = handle;
  tracked.context = kind == ObjectKind::context ? tracked.ref : context;
  if (kind == ObjectKind::context) contexts_by_index_[tracked.ref.index] = handle;
  auto context_it = contexts_by_index_.find(tracked.context.index);
  tracked.context_handle = context_it == contexts_by_index_.end() ? nullptr : context_it->second;
  if (kind == ObjectKind::context)
    tracked.context_slot = slot;
  else if (const Tracked* owner = find(tracked.context_handle))
    tracked.context_slot = owner->slot;
  tracked.simulated = simulated;
  if (kind == ObjectKind::qp) {
    const auto* qp = static_cast<const ibv_qp*>(handle);
    tracked.qp_num = qp->qp_num;
    tracked.qp_type = qp->qp_type;
    tracked.send_cq = qp->send_cq;
    tracked.recv_cq = qp->recv_cq;
    by_qp_num_.insert(qp->qp_num, slot);
  }
  by_handle_.insert(reinterpret_cast<std::uintptr_t>(handle), slot);
  return tracked;
}

void ObjectRegistry::remove(const void* handle) {
  Tracked* tracked = find(handle);
  forget_recent();
  if (tracked == nullptr) return;
  if (tracked->ref.kind == ObjectKind::qp) by_qp_num_.erase(tracked->qp_num);
  if (tracked->ref.kind == ObjectKind::context) contexts_by_index_.erase(tracked->ref.index);
  by_handle_.erase(reinterpret_cast<std::uintptr_t>(handle));
  free_slots_.push_back(tracked->slot);
  *tracked = Tracked{};  // releases what it held (held completions, fds...)
}

std::vector<Tracked*> ObjectRegistry::all(ObjectKind kind) {
  std::vector<Tracked*> found;
  for (Tracked& tracked : slots_)
    if (tracked.handle != nullptr && tracked.ref.kind == kind) found.push_back(&tracked);
  std::sort(found.begin(), found.end(),
            [](const Tracked* a, const Tracked* b) { return a->ref.index < b->ref.index; });
  return found;
}

}  // namespace verbfault::interposer

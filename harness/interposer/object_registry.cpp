#include "object_registry.h"

#include <algorithm>

namespace verbfault::interposer {

Tracked& ObjectRegistry::add(ObjectKind kind, const void* handle, ObjectRef context,
                             bool simulated) {
  Tracked tracked;
  tracked.ref = {kind, next_index_[static_cast<std::size_t>(kind)]++};
  tracked.handle = handle;
  tracked.context = kind == ObjectKind::context ? tracked.ref : context;
  if (kind == ObjectKind::context) contexts_by_index_[tracked.ref.index] = handle;
  auto context_it = contexts_by_index_.find(tracked.context.index);
  tracked.context_handle = context_it == contexts_by_index_.end() ? nullptr : context_it->second;
  tracked.simulated = simulated;
  if (kind == ObjectKind::qp) {
    const auto* qp = static_cast<const ibv_qp*>(handle);
    tracked.qp_num = qp->qp_num;
    tracked.qp_type = qp->qp_type;
    tracked.send_cq = qp->send_cq;
    tracked.recv_cq = qp->recv_cq;
    qps_by_number_[qp->qp_num] = handle;
  }
  // A provider may reuse an address after destroy: the new object takes
  // over the address under its own name.
  return objects_[handle] = std::move(tracked);
}

Tracked* ObjectRegistry::find(const void* handle) {
  auto it = objects_.find(handle);
  return it == objects_.end() ? nullptr : &it->second;
}

void ObjectRegistry::remove(const void* handle) {
  auto it = objects_.find(handle);
  if (it == objects_.end()) return;
  if (it->second.ref.kind == ObjectKind::qp) qps_by_number_.erase(it->second.qp_num);
  if (it->second.ref.kind == ObjectKind::context) contexts_by_index_.erase(it->second.ref.index);
  objects_.erase(it);
}

Tracked* ObjectRegistry::find_qp(std::uint32_t qp_num) {
  auto it = qps_by_number_.find(qp_num);
  return it == qps_by_number_.end() ? nullptr : find(it->second);
}

std::string ObjectRegistry::qp_name(std::uint32_t qp_num) {
  if (Tracked* qp = find_qp(qp_num)) return qp->name();
  return "qpn:" + std::to_string(qp_num);
}

Tracked* ObjectRegistry::context_of(const Tracked& object) {
  return object.context_handle == nullptr ? nullptr : find(object.context_handle);
}

std::vector<Tracked*> ObjectRegistry::all(ObjectKind kind) {
  std::vector<Tracked*> found;
  for (auto& [handle, tracked] : objects_)
    if (tracked.ref.kind == kind) found.push_back(&tracked);
  std::sort(found.begin(), found.end(),
            [](const Tracked* a, const Tracked* b) { return a->ref.index < b->ref.index; });
  return found;
}

}  // namespace verbfault::interposer

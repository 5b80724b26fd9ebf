// What every layer below the front door may know of a verbs object: its
// name and slot (object_id.h), the address the application holds, the
// context it belongs to, and for QPs the facts a selector or a check reads
// (type, number, CQs). The interposer's registry creates one per object and
// keeps it in place while the object lives; the engine and the observers
// read it and keep their own per-object state in tables indexed by `slot`.
#pragma once

#include "object_id.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace verbfault::record {

struct Object {
  ObjectRef ref{};
  std::uint32_t slot = kNoSlot;  // its place in the registry while it lives
  const void* handle = nullptr;  // the address the application holds
  ObjectRef context{};           // the context it belongs to
  const void* context_handle = nullptr;
  std::uint32_t context_slot = kNoSlot;
  bool simulated = false;  // on a simulated device (cause-level faults)
  // QPs.
  ibv_qp_type qp_type{};
  std::uint32_t qp_num = 0;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;

  ObjectId id() const { return {slot, ref}; }
  std::string name() const { return to_string(ref); }
};

}  // namespace verbfault::record

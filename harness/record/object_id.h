// How the layers below the front door name a verbs object: its stable name
// (ObjectRef: "qp#2" is the third QP of the run, whatever pointer or number
// the provider gave it) and its slot, a small dense number the interposer's
// registry assigns while the object lives. Layers and observers keep their
// own per-object state in tables indexed by the slot; a slot is reused only
// after its object is gone, and the owner of each table is told first
// (object added / object forgotten).
#pragma once

#include "verbfault/plan.h"

#include <cstdint>
#include <limits>

namespace verbfault::record {

inline constexpr std::uint32_t kNoSlot = std::numeric_limits<std::uint32_t>::max();
// ObjectRef::index of a QP number that no object of this run has.
inline constexpr std::uint32_t kUnknownIndex = std::numeric_limits<std::uint32_t>::max();

struct ObjectId {
  std::uint32_t slot = kNoSlot;
  ObjectRef ref{ObjectKind::context, 0};
  bool valid() const { return slot != kNoSlot; }
};

}  // namespace verbfault::record

// The interposer's view of each verbs object of a run: its stable name
// ("qp#2" is the third QP the process created, whatever pointer or QP number
// the provider gave it) and the fault state the interposer keeps for it.
// Selectors, decisions and the trace use these names only.
//
// Owner: the interposer; every call happens under the interposer lock.
#pragma once

#include "object.h"
#include "object_faults.h"
#include "slot_map.h"
#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace verbfault::interposer {

// An object as the interposer tracks it: what every layer may read of it
// (record::Object), and the file-descriptor loans in progress (FdLoan,
// interposer.h). The engine and the observers keep their own state of it,
// by slot.
struct Tracked : record::Object {
  // Its state in the engine (FaultEngine::object_added; the engine's table
  // never moves an entry): the fast paths reach it in one load.
  engine::ObjectFaults* faults = nullptr;
  int fd_loans = 0;  // FdLoans in progress: the object holds the provider's fd
};

// Objects live in slots (a deque: a Tracked never moves while it lives);
// a slot is reused after its object is removed. Lookups by address and by
// QP number go through SlotMaps.
class ObjectRegistry {
 public:
  // A new object at `handle`; an object the registry still holds at that
  // address must have been removed first (Run::add_object does: the
  // engine and the checks forget it too).
  Tracked& add(ObjectKind kind, const void* handle, ObjectRef context, bool simulated);
  // nullptr for objects the front door did not hand out.
  Tracked* find(const void* handle) {
    // A busy loop calls on a few objects again and again (its QPs and
    // CQs): the recently found are kept in a small direct-mapped cache,
    // emptied whenever an object is added or removed.
    const auto address = reinterpret_cast<std::uintptr_t>(handle);
    Recent& recent = recent_[(address >> 4 ^ address >> 12) & (kRecent - 1)];
    if (recent.handle == handle && handle != nullptr) return recent.tracked;
    const auto slot = by_handle_.find(address);
    if (!slot) return nullptr;
    recent = {handle, &slots_[*slot]};
    return recent.tracked;
  }
  void remove(const void* handle);
  // By QP number, with the same kind of cache as find() (a poll's
  // completions come from a few QPs).
  Tracked* find_qp(std::uint32_t qp_num) {
    RecentQp& recent = recent_qps_[qp_num & (kRecent - 1)];
    if (recent.tracked != nullptr && recent.qp_num == qp_num) return recent.tracked;
    const auto slot = by_qp_num_.find(qp_num);
    if (!slot) return nullptr;
    recent = {qp_num, &slots_[*slot]};
    return recent.tracked;
  }
  // The QP of a completion's QP number: its id, or an invalid one named
  // kUnknownIndex.
  record::ObjectId qp_id(std::uint32_t qp_num) {
    if (Tracked* qp = find_qp(qp_num)) return qp->id();
    return {record::kNoSlot, {ObjectKind::qp, record::kUnknownIndex}};
  }
  // Objects created from now on are named from 0 again (a new Session).
  void restart_names() { next_index_.fill(0); }
  // Every tracked object of a kind, in creation order.
  std::vector<Tracked*> all(ObjectKind kind);

 private:
  // Empties the caches of find() and find_qp() (an object added or removed).
  void forget_recent() {
    recent_ = {};
    recent_qps_ = {};
  }
  std::deque<Tracked> slots_;
  struct Recent {
    const void* handle = nullptr;
    Tracked* tracked = nullptr;
  };
  static constexpr std::size_t kRecent = 8;
  std::array<Recent, kRecent> recent_{};
  struct RecentQp {
    std::uint32_t qp_num = 0;
    Tracked* tracked = nullptr;
  };
  std::array<RecentQp, kRecent> recent_qps_{};
  std::vector<std::uint32_t> free_slots_;
  SlotMap by_handle_;
  SlotMap by_qp_num_;
  std::unordered_map<std::uint32_t, const void*> contexts_by_index_;
  static constexpr std::size_t kKinds = static_cast<std::size_t>(ObjectKind::cm_id) + 1;
  std::array<std::uint32_t, kKinds> next_index_{};  // per ObjectKind
};

}  // namespace verbfault::interposer

// The interposer's view of each verbs object of a run: its stable name
// ("qp#2" is the third QP the process created, whatever pointer or QP number
// the provider gave it) and the fault state the interposer keeps for it.
// Selectors, decisions and the trace use these names only.
//
// Owner: the interposer; every call happens under the interposer lock.
#pragma once

#include "injected_events.h"
#include "object.h"
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

// Opportunities of one rule on one object, and how often it fired there
// (the fault engine's counters; fault_engine.h).
struct Counter {
  std::uint64_t opportunities = 0;
  std::uint64_t fired = 0;
};

// A posted work request whose completion the interposer will turn into an
// error (effect level).
struct DoomedWr {
  std::uint64_t wr_id = 0;
  Side side = Side::send;
  ibv_wc_status status = IBV_WC_GENERAL_ERR;
  std::uint32_t rule = 0;
};

// An object as the interposer tracks it: what every layer may read of it
// (record::Object), then the fault state the interposer keeps for it.
struct Tracked : record::Object {
  // QPs.
  std::deque<DoomedWr> doomed;
  bool injected_error = false;  // completions polled from now on are flushes

  // CQs.
  std::vector<ibv_wc> held;        // completions held back (delayed_completion)
  std::uint32_t held_polls = 0;    // polls until `held` is visible again
  bool absorb_next_event = false;  // coalesce_cq_event pending
  bool armed = false;              // req_notify_cq since the last event delivered

  // Effect level on a real provider: the wrapped fd of a channel or a
  // context, the events injected into it, and the conditions the
  // interposer emulates.
  EventFd events;
  int fd_loans = 0;  // FdLoans in progress: the object holds the provider's fd
  std::deque<ibv_cq*> injected_cq_events;               // channels
  std::deque<ibv_async_event> injected_async;           // contexts: not yet read
  std::vector<ibv_async_event> injected_async_unacked;  // contexts: read, not acked
  unsigned injected_cq_unacked = 0;                     // CQs: injected events read, not acked
  bool overflowed = false;                              // CQs: in error after an injected overflow
  bool port_down = false;                               // contexts
  bool dead = false;                                    // contexts: after an injected DEVICE_FATAL

  // The fault engine's counters of each rule on this object (opportunities
  // and firings), indexed by rule; sized when the object is first counted.
  std::vector<Counter> rule_counters;
  std::uint64_t counters_generation = 0;  // FaultEngine's plan generation they count for
};

// Objects live in slots (a deque: a Tracked never moves while it lives);
// a slot is reused after its object is removed. Lookups by address and by
// QP number go through SlotMaps.
class ObjectRegistry {
 public:
  Tracked& add(ObjectKind kind, const void* handle, ObjectRef context, bool simulated);
  // nullptr for objects the front door did not hand out.
  Tracked* find(const void* handle) {
    const auto slot = by_handle_.find(reinterpret_cast<std::uintptr_t>(handle));
    return slot ? &slots_[*slot] : nullptr;
  }
  void remove(const void* handle);
  Tracked* find_qp(std::uint32_t qp_num) {
    const auto slot = by_qp_num_.find(qp_num);
    return slot ? &slots_[*slot] : nullptr;
  }
  // The QP of a completion's QP number: its id, or an invalid one named
  // kUnknownIndex.
  record::ObjectId qp_id(std::uint32_t qp_num) {
    if (Tracked* qp = find_qp(qp_num)) return qp->id();
    return {record::kNoSlot, {ObjectKind::qp, record::kUnknownIndex}};
  }
  Tracked* context_of(const Tracked& object) {
    return object.context_handle == nullptr ? nullptr : find(object.context_handle);
  }
  // Objects created from now on are named from 0 again (a new Session).
  void restart_names() { next_index_.fill(0); }
  // Every tracked object of a kind, in creation order.
  std::vector<Tracked*> all(ObjectKind kind);

 private:
  std::deque<Tracked> slots_;
  std::vector<std::uint32_t> free_slots_;
  SlotMap by_handle_;
  SlotMap by_qp_num_;
  std::unordered_map<std::uint32_t, const void*> contexts_by_index_;
  std::array<std::uint32_t, 8> next_index_{};  // per ObjectKind
};

}  // namespace verbfault::interposer

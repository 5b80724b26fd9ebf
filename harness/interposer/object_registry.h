// The interposer's view of each verbs object of a run: its stable name
// ("qp#2" is the third QP the process created, whatever pointer or QP number
// the provider gave it) and the fault state the interposer keeps for it.
// Selectors, decisions and the trace use these names only.
//
// Owner: the interposer; every call happens under the interposer lock.
#pragma once

#include "injected_events.h"
#include "object_checks.h"
#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace verbfault::interposer {

// A posted work request whose completion the interposer will turn into an
// error (effect level).
struct DoomedWr {
  std::uint64_t wr_id = 0;
  Side side = Side::send;
  ibv_wc_status status = IBV_WC_GENERAL_ERR;
  std::uint32_t rule = 0;
};

struct Tracked {
  ObjectRef ref{};
  const void* handle = nullptr;
  ObjectRef context{};  // the context the object belongs to
  const void* context_handle = nullptr;
  bool simulated = false;  // on a simulated device (cause-level faults)

  // QPs.
  ibv_qp_type qp_type{};
  std::uint32_t qp_num = 0;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
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

  checkers::ObjectChecks checks;  // what the runtime checks remember of it

  std::uint64_t trace_seq = 0;  // next per-object sequence number
  std::string name() const { return to_string(ref); }
};

class ObjectRegistry {
 public:
  Tracked& add(ObjectKind kind, const void* handle, ObjectRef context, bool simulated);
  // nullptr for objects the front door did not hand out.
  Tracked* find(const void* handle);
  void remove(const void* handle);
  Tracked* find_qp(std::uint32_t qp_num);
  // "qp#N" for a QP number, or "qpn:N" for one the process does not own.
  std::string qp_name(std::uint32_t qp_num);
  Tracked* context_of(const Tracked& object);
  // Objects created from now on are named from 0 again (a new Session).
  void restart_names() { next_index_.fill(0); }
  // Every tracked object of a kind, in creation order.
  std::vector<Tracked*> all(ObjectKind kind);

 private:
  std::unordered_map<const void*, Tracked> objects_;
  std::unordered_map<std::uint32_t, const void*> qps_by_number_;
  std::unordered_map<std::uint32_t, const void*> contexts_by_index_;
  std::array<std::uint32_t, 8> next_index_{};  // per ObjectKind
};

}  // namespace verbfault::interposer

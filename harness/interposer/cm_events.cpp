#include "cm_events.h"

#include "cm_faults.h"
#include "run.h"

#include <rdma/rdma_cma.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace verbfault::interposer::cm_events {

namespace {

struct Held {
  const rdma_cm_id* counted_on = nullptr;  // the id whose count it is
  rdma_cm_event_type type{};
  pid_t taker = 0;  // the thread that took it (its kernel id)
};

// Whether thread `tid` of this process still runs (tgkill(2) with signal 0
// checks it exists and sends nothing).
bool alive(pid_t tid) {
  return syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH;
}

// The events taken and not acknowledged, by their address (guarded by the
// interposer's lock). librdmacm frees an event at its ack, so an address
// names one event while it is held.
std::unordered_map<const rdma_cm_event*, Held>& held() {
  static auto* held = new std::unordered_map<const rdma_cm_event*, Held>();  // lives to _exit
  return *held;
}

// The events acknowledged since rdma_get_cm_event last returned their
// address, by address (guarded by the interposer's lock): a second ack of
// one is cm.event_acked_twice. An address leaves it when an event is made
// there again (malloc reuses a freed event's memory, which keeps this
// small); past kAckedRemembered addresses it is emptied, which forgets
// older acks and never makes a finding of a first one.
constexpr std::size_t kAckedRemembered = 4096;
std::unordered_map<const rdma_cm_event*, Held>& acked_events() {
  static auto* acked = new std::unordered_map<const rdma_cm_event*, Held>();  // lives to _exit
  return *acked;
}

// The plan's name of an event type (connect_request, ...: the ABI's
// numbers in order).
std::string name_of(rdma_cm_event_type type) {
  return type <= RDMA_CM_EVENT_TIMEWAIT_EXIT ? std::string(to_string(static_cast<CmEvent>(type)))
                                             : "event " + std::to_string(static_cast<int>(type));
}

// The id an event counts on, as librdmacm's rdma_ack_cm_event completes
// it: a CONNECT_REQUEST on its listener (its cma_event's id_priv is the
// listener's), every other event on its own id.
const rdma_cm_id* counted_on(const rdma_cm_event& event) {
  return event.event == RDMA_CM_EVENT_CONNECT_REQUEST ? event.listen_id : event.id;
}

}  // namespace

void got(Run& run, const rdma_cm_event* event) {
  if (event == nullptr || !run.active()) return;
  std::lock_guard lock(run.mutex);
  held()[event] = Held{counted_on(*event), event->event, gettid()};
  acked_events().erase(event);
}

bool acked(Run& run, const rdma_cm_event* event) {
  if (event == nullptr || !run.active()) return true;
  std::lock_guard lock(run.mutex);
  if (const auto taken = held().find(event); taken != held().end()) {
    if (acked_events().size() >= kAckedRemembered) acked_events().clear();
    acked_events().emplace(event, taken->second);
    held().erase(taken);
    return true;
  }
  // Neither held nor acknowledged: not an event the harness saw returned
  // (taken before the run began); librdmacm judges it.
  const auto again = acked_events().find(event);
  if (again == acked_events().end()) return true;
  // Its id, while the id lives (the event's own fields are freed memory).
  if (const Tracked* id =
          cm_faults::id_of_uid(run, reinterpret_cast<std::uintptr_t>(again->second.counted_on)))
    run.checkers.cm_event_acked_twice(run, *id, name_of(again->second.type));
  return false;
}

void destroying(Run& run, const rdma_cm_id* id) {
  if (id == nullptr || !run.active()) return;
  std::unique_lock lock(run.mutex);
  unsigned count = 0;
  std::string events;
  for (const auto& [event, what] : held()) {
    // The event librdmacm keeps for a synchronous id (id->event) it
    // acknowledges itself in rdma_destroy_id.
    if (what.counted_on != id || event == id->event) continue;
    // An event another live thread took is that thread's to acknowledge:
    // librdmacm's rdma_destroy_id waits for it (that is why it counts),
    // and the scheduler judges the wait if the ack never comes. One the
    // destroying thread took itself, or a thread that has ended, can never
    // be acknowledged while the destroy waits.
    if (what.taker != gettid() && alive(what.taker)) continue;
    ++count;
    events += (events.empty() ? "" : ", ") + name_of(what.type);
  }
  if (count == 0) return;
  const Tracked* object = cm_faults::id_of_uid(run, reinterpret_cast<std::uintptr_t>(id));
  if (object == nullptr) return;  // not an id the interposer saw made
  run.checkers.cm_destroy_id_unacked(run, *object, count, events);
}

}  // namespace verbfault::interposer::cm_events

#include "fabric_wait.h"

#include "cm/connection_manager.h"

#include "completion_queue.h"
#include "context.h"
#include "device_nap.h"
#include "fabric.h"
#include "queue_pair.h"
#include "remote.h"
#include "timing_notes.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>

namespace verbfault::sim {

namespace {

// How long a wait goes on while no peer makes a verbs call, no frame comes
// and the fabric is not quiescent, before the wall clock decides: longer
// than a peer spends outside verbs between two calls of a connection
// set-up on a loaded machine (as the thread scheduler's escape time), short
// enough that a program whose peer waits on a socket for it keeps going.
constexpr auto kGrace = std::chrono::milliseconds(250);
constexpr auto kLongestNap = std::chrono::microseconds(1000);

std::atomic<bool (*)()> wait_permission{nullptr};
// The waits in progress (FabricWaiter's lifetime).
std::atomic<int> waits_in_progress{0};

}  // namespace

void set_wait_permission(bool (*may_wait)()) {
  wait_permission.store(may_wait, std::memory_order_release);
}

FabricWaiter::FabricWaiter(Fabric& fabric) : fabric_(fabric) {
  waits_in_progress.fetch_add(1, std::memory_order_relaxed);
}

FabricWaiter::~FabricWaiter() {
  waits_in_progress.fetch_sub(1, std::memory_order_relaxed);
}

bool FabricWaiter::in_progress() {
  return waits_in_progress.load(std::memory_order_relaxed) > 0;
}

bool FabricWaiter::on_shared_fabric(Fabric& fabric) {
  wire::Endpoint* endpoint = fabric.started_endpoint();
  if (endpoint == nullptr) return false;
  // Alone, with nobody still to join: nothing can come.
  return endpoint->joins() < fabric.expected_members() || endpoint->others_live();
}

bool FabricWaiter::applies(Fabric& fabric) {
  if (!on_shared_fabric(fabric)) return false;
  bool (*may_wait)() = wait_permission.load(std::memory_order_acquire);
  if (may_wait != nullptr && !may_wait()) return false;
  // After a wait gave up, no wait blocks until a peer is back in verbs.
  std::optional<uint64_t>& gave_up = fabric.gave_up_at_calls();
  if (gave_up && *gave_up == fabric.started_endpoint()->others_calls()) return false;
  gave_up.reset();
  return true;
}

void FabricWaiter::idle_after_giving_up(Fabric& fabric) {
  wire::Endpoint* endpoint = fabric.started_endpoint();
  if (endpoint == nullptr) return;
  const std::optional<uint64_t>& gave_up = fabric.gave_up_at_calls();
  if (gave_up && *gave_up == endpoint->others_calls()) fabric.mark_waiting();
}

bool FabricWaiter::ask_outside_members_to_look(wire::Endpoint& endpoint) {
  Fabric& fabric = fabric_;
  bool asked = false;
  for (uint32_t member : endpoint.members()) {
    if (member == fabric.member() || !endpoint.outside(member)) continue;
    // Once per verbs call; again while the member holds requests for a
    // receive WR: nothing of it but its service thread can answer them now
    // (remote.cpp settles them when asked), and they go first.
    uint64_t& asked_at = fabric.asked_to_look_at(member);
    if (asked_at == fabric.step() && !endpoint.settling(member)) continue;
    asked_at = fabric.step();
    remote::ask_to_look(fabric, member);
    asked = true;
  }
  return asked;
}

FabricWaiter::Look FabricWaiter::look() {
  Fabric& fabric = fabric_;
  wire::Endpoint* endpoint = fabric.started_endpoint();
  endpoint->set_waiting(true);
  fabric.set_marked_waiting(true);
  if (endpoint->joins() >= fabric.expected_members() && endpoint->quiescent()) {
    // A member whose threads all wait outside the device may wait on a
    // socket this process's application wrote to before this call: its
    // mark may predate the bytes. It looks again first (the frame it
    // answers counts as sent until handled, so the fabric is not quiescent
    // before), once per verbs call of this process.
    if (ask_outside_members_to_look(*endpoint)) return Look::kWait;
    // Requests held for a receive WR first (nobody will post one now),
    // then the virtual clock, once no member holds any.
    if (remote::settle_held(fabric) || (!endpoint->another_settling() && fabric.advance_clock())) {
      fabric.count_activity();
      return Look::kActed;
    }
    if (endpoint->another_settling()) return Look::kWait;
    return Look::kNothingCan;
  }
  const auto now = wire::RealClock::now();
  const uint64_t peer_calls = endpoint->others_calls();
  if (fabric.activity() != activity_seen_ || peer_calls != peer_calls_seen_) {
    activity_seen_ = fabric.activity();
    peer_calls_seen_ = peer_calls;
    since_ = now;
  }
  if (now - since_ < kGrace) return Look::kWait;
  std::string waited_for;
  for (uint32_t member : endpoint->members()) {
    if (member == fabric.member()) continue;
    remote::give_up_on(fabric, member);
    if (!waited_for.empty()) waited_for += ',';
    waited_for += std::to_string(member);
  }
  fabric.gave_up_at_calls() = peer_calls;
  note_timing(
      "gave up waiting for member(s) " + waited_for + ": no verbs call, frame or " +
      "quiescence for " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(kGrace).count()) +
      " ms (a peer outside verbs); the wall clock decides until one is back in verbs");
  return Look::kGaveUp;
}

bool FabricWaiter::sleep(std::unique_lock<std::mutex>& guard, bool interruptible) {
  // A frame wakes the sleeper at once (remote.cpp notifies); quiescence
  // raises no signal, so it is looked for between naps that grow to 1 ms.
  const auto nap = nap_;
  nap_ = std::min(nap_ * 2, std::chrono::duration_cast<std::chrono::microseconds>(kLongestNap));
  if (interruptible) return nap_in_device(guard, nap) == Nap::kInterrupted;
  // The deadline on the real clock, as steady_clock's time point: the
  // condition waits with pthread_cond_clockwait(CLOCK_MONOTONIC) until
  // it, while steady_clock::now() itself is the program's virtual clock
  // under the harness (wire/real_clock.h).
  fabric_.wakeup.wait_until(guard, std::chrono::steady_clock::time_point(
                                       wire::RealClock::now().time_since_epoch() + nap));
  return false;
}

FabricWait FabricWaiter::finish(FabricWait how) {
  fabric_.stop_waiting();
  return how;
}

bool expects_deliveries(CompletionQueue& cq) {
  Fabric& fabric = cq.context().fabric();
  // A process on no fabric (or before its wire runs) hears from nobody:
  // an empty poll of a lone process walks no QPs.
  if (fabric.started_endpoint() == nullptr) return false;
  const bool ud_may_receive = fabric.peers_may_send() || fabric.expected_members() > 1;
  for (auto& [qp, owned] : cq.context().qps) {
    if (&qp->send_cq() != &cq && &qp->recv_cq() != &cq) continue;
    if (qp->type() == IBV_QPT_UD) {
      if (ud_may_receive) return true;
    } else if (fabric.member_at(qp->context().device(), qp->attr().ah_attr)) {
      return true;
    }
  }
  return false;
}

bool remote_work_possible(Fabric& fabric) {
  if (fabric.peers_may_send()) return true;
  // Not connection_manager(): asked on the poll path, which must not make it.
  if (const cm::ConnectionManager* manager = fabric.existing_connection_manager();
      manager != nullptr && manager->expects_messages())
    return true;
  wire::Endpoint* endpoint = fabric.started_endpoint();
  if (endpoint == nullptr || !FabricWaiter::on_shared_fabric(fabric)) return false;
  if (fabric.expected_members() > 1) return true;  // a group run: the others are peers
  for (Context* context : fabric.contexts())
    for (auto& [qp, owned] : context->qps) {
      if (qp->type() == IBV_QPT_UD) continue;  // counts once a frame came (peers_may_send)
      if (std::optional<uint32_t> member =
              fabric.member_at(qp->context().device(), qp->attr().ah_attr))
        if (endpoint->alive(*member)) return true;
    }
  return false;
}

}  // namespace verbfault::sim

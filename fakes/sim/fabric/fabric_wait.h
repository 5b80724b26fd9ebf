// Waiting for another process of the local fabric, deterministically
// (docs/local-fabric.md, "Determinism across processes").
//
// What another process does reaches this one as deliveries held in its
// CQs (delivery.h). A poll that finds nothing visible reveals the next
// delivery of its CQ; when there is none yet, it waits here for one rather
// than return an empty poll whose count would follow the wall clock. The
// wait ends:
// - ready: what the caller waits for is there (a delivery, an event);
// - nothing can come: the fabric is quiescent (every member waits in its
//   device and every frame sent has been handled, wire::Endpoint::
//   quiescent(), and as many members as VERBFAULT_FABRIC_SIZE joined), and
//   nothing is left to do at quiescence. In that order, first any member's
//   requests that wait for a receive WR are answered (an RNR NAK; the
//   members holding some go first, wire::Endpoint::set_settling), then the
//   virtual clock moves to the next deadline (an RNR or transport retry).
//   So the clock of a process with peers moves only when no peer can act:
//   a retry cannot outrun a peer about to post its receive;
// - gave up: no peer made a verbs call, no frame came and the fabric did
//   not become quiescent for the grace period (250 ms): a peer computes, or
//   waits outside verbs, for instance on a socket for this very process.
//   The wall clock decided: the wait says so (timing_notes.h) and tells the
//   peers (they answer what they hold of this process's requests and hold
//   no more until their next verbs call), and no wait of this process
//   blocks again until a peer makes a verbs call: its polls return at
//   once, as on hardware.
#pragma once

#include "wire/real_clock.h"

#include <chrono>
#include <cstdint>
#include <mutex>

namespace verbfault::sim {

class CompletionQueue;
class Fabric;
namespace wire {
class Endpoint;
}

// Whether the calling thread may block in the device for another process:
// when another thread of the application could run, a blocked poll would
// hold it up (under the thread scheduler, it holds the baton). Installed
// by the harness (the thread scheduler knows); unset, yes.
void set_wait_permission(bool (*may_wait)());

// kInterrupted: a signal handler without SA_RESTART ran while the thread
// slept (device_nap.h); only an interruptible wait returns it.
enum class FabricWait { kReady, kNothingCan, kGaveUp, kInterrupted };

// One wait's state; see wait_in_fabric.
class FabricWaiter {
 public:
  // A wait on `fabric` (under its mutex); counts the waits in progress
  // (in_progress()).
  explicit FabricWaiter(Fabric& fabric);
  ~FabricWaiter();
  FabricWaiter(const FabricWaiter&) = delete;
  FabricWaiter& operator=(const FabricWaiter&) = delete;
  // Whether a thread of the process is in a wait; lock-free.
  static bool in_progress();
  // Whether a wait applies at all: this process is on a fabric with its
  // service thread running, another member is or is expected to be there,
  // and the calling thread may wait.
  static bool applies(Fabric& fabric);
  // Whether another member is on the fabric, or is still to join it.
  static bool on_shared_fabric(Fabric& fabric);
  // A poll that found nothing and did not wait because this process gave
  // up on its peers: the process counts as waiting in its device until its
  // next verbs call. Its empty polls are no progress a peer could wait for:
  // a peer's own wait, which would otherwise see calls forever, can end at
  // quiescence (else the two wait on each other, one in its device and the
  // other spinning on empty polls until it hears from the first outside
  // verbs, on a socket).
  static void idle_after_giving_up(Fabric& fabric);

  enum class Look { kActed, kNothingCan, kGaveUp, kWait };
  // Marks the process waiting and looks at the fabric: quiescent (acts,
  // or nothing can), past the grace period, or wait on.
  Look look();
  // Sleeps a while (released by any frame); whether a signal handler
  // without SA_RESTART interrupted it (only an `interruptible` sleep is:
  // it sleeps in device_nap.h's read(2) of a timer, the others on
  // Fabric::wakeup, whose wake is a futex's).
  bool sleep(std::unique_lock<std::mutex>& guard, bool interruptible);
  FabricWait finish(FabricWait how);

 private:
  // Asks members marked waiting outside the device to look again (once per
  // verbs call); whether any was asked.
  bool ask_outside_members_to_look(wire::Endpoint& endpoint);

  Fabric& fabric_;

  wire::RealClock::time_point since_ = wire::RealClock::now();
  uint64_t activity_seen_ = ~uint64_t{0};
  uint64_t peer_calls_seen_ = ~uint64_t{0};
  std::chrono::microseconds nap_{20};
};

// Waits under Fabric::mutex (held by `guard`, released while asleep) until
// `ready()` or the fabric says nothing can come; see above. Call only when
// FabricWaiter::applies(). `interruptible`: a signal ends the wait
// (kInterrupted), as it ends read(2) of a channel's fd; a poll is not.
template <class Ready>
FabricWait wait_in_fabric(Fabric& fabric, std::unique_lock<std::mutex>& guard, Ready ready,
                          bool interruptible = false) {
  FabricWaiter waiter(fabric);
  for (;;) {
    if (ready()) return waiter.finish(FabricWait::kReady);
    switch (waiter.look()) {
      case FabricWaiter::Look::kActed:
        continue;
      case FabricWaiter::Look::kNothingCan:
        return waiter.finish(FabricWait::kNothingCan);
      case FabricWaiter::Look::kGaveUp:
        return waiter.finish(FabricWait::kGaveUp);
      case FabricWaiter::Look::kWait:
        if (waiter.sleep(guard, interruptible)) return waiter.finish(FabricWait::kInterrupted);
    }
  }
}

// Whether a delivery may still come into `cq` from another process: one of
// its QPs is connected to another member (RC, UC), or is a UD QP of a
// process that exchanged frames with another member or runs in a group.
bool expects_deliveries(CompletionQueue& cq);

// Whether another process may still send this one something without any
// call of this one: it did before and is not gone, or this process runs in
// a group (VERBFAULT_FABRIC_SIZE), or has a QP connected to a live member.
// The liveness checks hold back then (provider::work_pending), and only
// then does the virtual clock wait for quiescence: a process whose QPs
// all talk to each other keeps its own time however many others share the
// fabric.
bool remote_work_possible(Fabric& fabric);

}  // namespace verbfault::sim

#include "fabric_poll.h"

#include "completion_queue.h"
#include "fabric.h"
#include "fabric_wait.h"

namespace verbfault::sim {

namespace {

// Makes the CQ's next held deliveries visible until one completion is
// (an answer may complete into another CQ only); whether one is.
bool reveal(CompletionQueue& cq) {
  while (cq.size() == 0 && cq.has_held() && cq.reveal_next(cq.awaiting_answers())) {
  }
  return cq.size() > 0;
}

// What a poll waiting for another process waits for: something it can
// reveal (an answer first while one is bound to come).
bool revealable(CompletionQueue& cq) {
  if (cq.size() > 0 || cq.in_error()) return true;
  return cq.awaiting_answers() ? cq.has_held_answer() : cq.has_held();
}

}  // namespace

int poll_from_fabric(std::unique_lock<std::mutex>& guard, CompletionQueue& cq, int n,
                     ibv_wc* wc) {
  int polled = cq.poll(n, wc);
  if (polled != 0 || n == 0) return polled;
  for (;;) {
    if (reveal(cq) || cq.in_error()) return cq.poll(n, wc);
    if (!expects_deliveries(cq)) break;
    if (!FabricWaiter::applies()) {
      FabricWaiter::idle_after_giving_up();
      break;
    }
    const FabricWait how = wait_in_fabric(guard, [&] { return revealable(cq); });
    if (how == FabricWait::kReady) continue;
    if (how == FabricWait::kNothingCan) return cq.poll(n, wc);
    FabricWaiter::idle_after_giving_up();
    break;  // gave up: the wall clock decides, as with no peer
  }
  if (Fabric::get().advance_clock()) polled = cq.poll(n, wc);
  return polled;
}

}  // namespace verbfault::sim

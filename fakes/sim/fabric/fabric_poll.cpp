#include "fabric_poll.h"

#include "completion_queue.h"
#include "context.h"
#include "fabric.h"
#include "fabric_wait.h"
#include "remote.h"

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

// Deliveries from another process are revealed when a poll finds nothing
// visible; completions this process makes itself (a UC or UD send
// completes when it leaves, IBA 9.8.3 / 9.9.3) are visible at once. A
// program that keeps its send queue full and polls one CQ for both
// (qperf's uc_bi_bw and ud_bi_bw) would then never see a receive: every
// poll has send completions to return. So after this many completions
// handed out without the CQ running dry, the next delivery joins them
// behind, waited for as a poll that found nothing waits (a deterministic
// point: it follows from this process's own calls). While deliveries keep
// coming so, each completion handed out lets one more in (both directions
// of a link move at one pace); once a wait ends with none (a stream of
// sends that nothing answers, at quiescence), the count starts again: such
// a stream pays one wait for quiescence per this many completions.
constexpr std::uint64_t kPolledBeforeReveal = 64;

// Reveals deliveries behind the CQ's visible completions, waiting for each
// while one may come.
void reveal_behind(std::unique_lock<std::mutex>& guard, CompletionQueue& cq) {
  Fabric& fabric = cq.context().fabric();
  std::uint64_t owed = cq.deliveries_streaming ? cq.polled_without_reveal : 1;
  cq.polled_without_reveal = 0;
  for (; owed > 0 && !cq.in_error(); --owed) {
    // One that came is revealed at once; one still to come is waited for
    // only where a wait applies (a process with another thread that could
    // run polls as on hardware: what came shows, nothing is waited for).
    // Nor while this process holds another's requests for a receive WR
    // (remote.cpp): deliveries wait for the application's ibv_post_recv,
    // which comes after this poll returns, and a wait would only reach
    // quiescence and drop them (UC, UD) or NAK them (RC): qperf's
    // uc_bi_bw, polling its sends while its receive queue ran dry, then
    // lost nearly every message the other side sent.
    if (!cq.has_held() && (!expects_deliveries(cq) || remote::holds_requests() ||
                           !FabricWaiter::applies(fabric) ||
                           wait_in_fabric(fabric, guard, [&] {
                             return cq.has_held() || cq.in_error();
                           }) != FabricWait::kReady)) {
      cq.deliveries_streaming = false;
      return;
    }
    if (cq.has_held()) cq.reveal_next(false);
    cq.deliveries_streaming = true;
  }
}

}  // namespace

int poll_from_fabric(std::unique_lock<std::mutex>& guard, CompletionQueue& cq, int n, ibv_wc* wc) {
  if (cq.size() > 0 && cq.polled_without_reveal >=
                           (cq.deliveries_streaming ? std::uint64_t{1} : kPolledBeforeReveal))
    reveal_behind(guard, cq);
  int polled = cq.poll(n, wc);
  if (polled != 0) cq.polled_without_reveal += static_cast<std::uint64_t>(polled);
  if (polled != 0 || n == 0) return polled;
  cq.polled_without_reveal = 0;
  cq.deliveries_streaming = false;
  Fabric& fabric = cq.context().fabric();
  for (;;) {
    if (reveal(cq) || cq.in_error()) return cq.poll(n, wc);
    if (!expects_deliveries(cq)) break;
    if (!FabricWaiter::applies(fabric)) {
      FabricWaiter::idle_after_giving_up(fabric);
      break;
    }
    const FabricWait how = wait_in_fabric(fabric, guard, [&] { return revealable(cq); });
    if (how == FabricWait::kReady) continue;
    if (how == FabricWait::kNothingCan) return cq.poll(n, wc);
    FabricWaiter::idle_after_giving_up(fabric);
    break;  // gave up: the wall clock decides, as with no peer
  }
  if (fabric.advance_clock()) polled = cq.poll(n, wc);
  return polled;
}

}  // namespace verbfault::sim

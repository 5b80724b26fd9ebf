// The wait of a blocking event call of the simulated device:
// ibv_get_cq_event, ibv_get_async_event, and the connection manager's
// GET_EVENT (cm/), each on its own queue.
#pragma once

#include "device_nap.h"
#include "fabric.h"
#include "fabric_wait.h"

#include <cerrno>
#include <chrono>
#include <mutex>

namespace verbfault::sim {

// Waits (fabric lock held) until `ready()` or, when the fd is non-blocking,
// fails with EAGAIN. Lets virtual time run first: a blocking wait is the
// application saying nothing else can happen.
//
// The clock runs in bounded bursts: a WQE that retries forever (rnr_retry 7,
// IBA 9.7.5.2.8) reschedules itself at every step, and running the clock
// until nothing is pending would spin forever under the lock: a non-blocking
// call would never return EAGAIN, and a blocking one would lock out the
// thread that could make it ready (e.g. by posting the missing receive).
// While blocked, the clock goes on running between short sleeps, as the
// hardware's retries would.
//
// With another process on the fabric, virtual time moves only when the
// fabric is quiescent (fabric_wait.h); a wait that finds it quiescent with
// nothing left to do goes on waiting (the peers may end, or a watchdog
// end the run).
template <class Ready>
int wait_for(Fabric& fabric, std::unique_lock<std::mutex>& guard, bool nonblocking, Ready ready) {
  // One deadline per step, as an empty poll: retries stay in step with the
  // application instead of racing ahead of a thread about to post.
  const bool with_peers = remote_work_possible(fabric) && FabricWaiter::applies(fabric);
  if (!with_peers && !ready()) fabric.advance_clock();
  if (ready()) return 0;
  if (nonblocking) return EAGAIN;
  // A signal handler without SA_RESTART ends the wait with EINTR, as it
  // ends the read(2) of a real channel's fd (device_nap.h).
  while (with_peers && FabricWaiter::applies(fabric)) {
    const FabricWait how = wait_in_fabric(fabric, guard, ready, /*interruptible=*/true);
    if (how == FabricWait::kReady) return 0;
    if (how == FabricWait::kInterrupted) return EINTR;
    if (how == FabricWait::kGaveUp) break;
    // Nothing can come now: still waiting, for the peers to see.
    fabric.mark_waiting();
    if (nap_in_device(guard, std::chrono::milliseconds(1)) == Nap::kInterrupted) return EINTR;
    if (ready()) return 0;
  }
  for (;;) {
    if (nap_in_device(guard, std::chrono::milliseconds(1)) == Nap::kInterrupted) return EINTR;
    if (ready()) return 0;
    fabric.advance_clock();
  }
}

}  // namespace verbfault::sim

// How a thread sleeps in the simulated device while it waits for an event
// (ibv_get_cq_event, ibv_get_async_event, and their waits for another
// process): in read(2) of a timer of its own, so that a signal interrupts it
// as it interrupts the read(2) of a real channel's fd. The kernel applies
// the handler's SA_RESTART to that read (signal(7): a read of a "slow"
// device is restarted with SA_RESTART, else fails with EINTR), so the
// device's blocking calls return EINTR exactly when the real ones would
// (qperf ends its timed loops with a SIGALRM handler without SA_RESTART,
// and expects the blocked ibv_get_cq_event to return).
//
// What used to wake a sleeper (Fabric::wakeup's notify) fires the timers
// of the sleeping threads at once too (Fabric::notify_waiters).
#pragma once

#include <chrono>
#include <mutex>

namespace verbfault::sim {

enum class Nap { kDone, kInterrupted };

// Sleeps up to `most`, with Fabric::mutex (held by `guard`) released, or
// until Fabric::notify_waiters; kInterrupted when a signal handler without
// SA_RESTART ran meanwhile. Without a timer (out of fds) it sleeps the
// whole nap, unwoken.
Nap nap_in_device(std::unique_lock<std::mutex>& guard, std::chrono::microseconds most);

// Under Fabric::mutex: fires the timers of every thread in nap_in_device.
void wake_napping_threads();

}  // namespace verbfault::sim

// What the harness may observe of a provider without changing it, for the
// runtime checks: known on the simulated device only (a real provider
// answers 0 / false: the checks that need these stay quiet there).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace verbfault::provider {

// How many completions `cq` holds.
std::size_t cq_depth(ibv_cq* cq);
// Whether a completion event of `cq` waits in its channel, not yet taken.
bool cq_event_pending(ibv_cq* cq);
// Whether the simulated device has work scheduled on its virtual clock
// (a retry) that can still produce completions or events by itself.
bool work_pending();
// Threads the simulated device runs itself (its local-fabric service
// thread): a process "with one thread" has this many more.
int device_threads();
// Moves the simulated device's clock to its next deadline and runs what is
// due then (the thread scheduler, when every thread waits, those blocked on
// fds on `fds`); false when nothing is pending, true at once when one of
// `fds` is readable (sim/provider.h).
bool advance_device_clock(std::span<const int> fds);
// Whether the simulated device shares its local fabric with another
// process: its event fds may become readable from outside the process.
bool shares_fabric();
// Whether a thread waits in the simulated device for another process (a
// wait with a grace period of its own).
bool waiting_for_another_process();
// Every application thread waits for something from outside the process
// (true; false when the wait ended): the simulated device counts as
// waiting for its peers' quiescence meanwhile, while none of `fds` (what
// they wait on) is readable (sim/provider.h).
void idle_outside(bool idle, std::span<const int> fds = {});
// Where the wall clock decided something in the simulated device (a wait
// for another process that gave up): whether notes wait (one load), and
// taking them, oldest first.
bool timing_notes_pending();
std::vector<std::string> take_timing_notes();

}  // namespace verbfault::provider

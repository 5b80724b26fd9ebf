// Where the wall clock, not the seed, decided something in the simulated
// device: a wait for another process that gave up after its grace period,
// requests answered because their sender gave up waiting. The harness puts
// each note in the trace (docs/local-fabric.md, "Determinism across
// processes"), as the thread scheduler does for a thread released to run
// outside the schedule, so that a trace that differs from run to run says
// why.
#pragma once

#include <string>
#include <vector>

namespace verbfault::sim {

// Adds a note (one line). Guarded by Fabric::mutex: called with it held.
void note_timing(std::string note);
// Whether notes wait to be taken: one relaxed load, for the poll path.
bool timing_notes_pending();
// The notes so far, oldest first, and forgets them. Takes Fabric::mutex.
std::vector<std::string> take_timing_notes();

}  // namespace verbfault::sim

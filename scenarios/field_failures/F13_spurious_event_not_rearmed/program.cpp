// F13 (pmem/rpma PR 231; ydb-platform/nbs PR 449): an extra CQ event with
// no completion behind it; the CQ must be re-armed (and drained) or no
// further notification comes.
//
//   field_failure_F13 buggy|fixed
//
// A device may raise an event with no completion (man ibv_get_cq_event
// warns of it; hardware that fires when a CQ is armed while it still holds
// completions does), and the plan makes the simulated device raise one on
// some arms (spurious_cq_event p=0.2). The buggy progress loop takes an
// empty CQ for "nothing happened" and goes back to sleep without
// re-arming: no further event comes, and the worker's next write is never
// counted. The fixed loop re-arms after every event. The worker thinks
// 100 us between writes: the progress thread has gone back to sleep before
// each, as between an application's requests.
#include "progress_thread.h"

namespace {

using namespace field_failures;

void* progress(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  s.pair.arm(s.pair.cq);
  drain(s);
  for (;;) {
    if (stopping(s)) return nullptr;
    take_event(s);
    ibv_wc wc[kBatch];
    const int n = s.pair.poll(kBatch, wc);
    if (n == 0 && !s.fixed) continue;  // "woken for nothing": asleep again, not re-armed
    s.pair.arm(s.pair.cq);
    deliver(s, wc, n);
    drain(s);
  }
}

void f13(bool fixed) {
  run(fixed, progress, {.bursts = 8, .size = 1, .think_us = 100}, /*wake_up=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  return run_variant(argc, argv, f13);
}

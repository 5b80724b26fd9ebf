// F12 (linux-rdma/perftest issue 137, PR 203): waited for an event without
// draining the CQ, while one event may stand for several completions.
//
//   field_failure_F12 buggy|fixed
//
// The progress thread takes one completion per event. Completions that land
// while the CQ is not armed share one event (the arm after an event covers
// the next completion only), so the buggy loop falls behind by one
// completion each time it happens and the worker, waiting for its whole
// burst, waits forever. The fixed loop drains the CQ after each event.
// Found when the worker posts its burst before the progress thread takes
// the event: the seed decides.
#include "progress_thread.h"

namespace {

using namespace field_failures;

void* progress(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  for (;;) {
    s.pair.arm(s.pair.cq);
    if (s.fixed) {
      drain(s);
    } else {
      ibv_wc wc[1];
      deliver(s, wc, s.pair.poll(1, wc));  // "one event, one completion"
    }
    if (stopping(s)) return nullptr;
    take_event(s);
  }
}

void f12(bool fixed) {
  run(fixed, progress, {.bursts = 3, .size = 3}, /*wake_up=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  return run_variant(argc, argv, f12);
}

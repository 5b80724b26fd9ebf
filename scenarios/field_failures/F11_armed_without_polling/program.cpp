// F11 (ofiwg/libfabric issue 796, fixed by PR 875): the verbs provider's
// blocking CQ read raced between poll and req_notify and lost the wakeup.
//
//   field_failure_F11 buggy|fixed
//
// The progress thread reads completions the way a blocking CQ read
// (fi_cq_sread) was written: arm the CQ, sleep until its event, then poll
// what is there and return it. The worker posts a burst of writes and
// waits for their completions. A completion that lands after the poll that
// ends one read and before the arm that starts the next is in the CQ when
// it is armed, and an arm covers only the NEXT completion (man
// ibv_req_notify_cq): the next read sleeps on a CQ that will raise no
// event. The fixed read (PR 875's shape) arms, then polls, and sleeps only
// when that poll found nothing. Found when the worker's writes land between
// two reads: the seed decides.
#include "progress_thread.h"

namespace {

using namespace field_failures;

// One blocking read: at least one completion into `wc`, how many.
int blocking_read(Shared& s, ibv_wc (&wc)[kBatch]) {
  for (;;) {
    s.pair.arm(s.pair.cq);
    if (s.fixed) {
      const int n = s.pair.poll(kBatch, wc);  // what landed before the arm
      if (n > 0) return n;
    }
    take_event(s);
    const int n = s.pair.poll(kBatch, wc);
    if (n > 0) return n;
  }
}

void* progress(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  while (!stopping(s)) {
    ibv_wc wc[kBatch];
    deliver(s, wc, blocking_read(s, wc));
  }
  return nullptr;
}

void f11(bool fixed) {
  run(fixed, progress, {.bursts = 4, .size = 2}, /*wake_up=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  return run_variant(argc, argv, f11);
}

// F10 (apache/brpc issue 3415, PR 3425): a completion that arrived between
// "poll found nothing" and the re-arm was stranded; RPC timeouts.
//
//   field_failure_F10 buggy|fixed
//
// The progress thread polls the CQ empty, hands the batch to the worker,
// then re-arms and sleeps. The worker, woken by the hand-over, posts its
// next write at once: when it does so before the re-arm, the completion is
// in the CQ when it is armed, and an arm covers only the NEXT completion
// (man ibv_req_notify_cq; IBA 11.4.2.2). The buggy loop sleeps without
// polling again: the completion is stranded and the worker waits forever.
// The fixed loop polls once more after arming. Found when the worker runs
// ahead of the progress thread: the seed decides.
#include "progress_thread.h"

namespace {

using namespace field_failures;

void* progress(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  for (;;) {
    ibv_wc wc[kBatch];
    const int n = collect(s, wc);  // the last poll found nothing ...
    deliver(s, wc, n);             // ... the worker, woken here, posts its next write ...
    if (stopping(s)) return nullptr;
    s.pair.arm(s.pair.cq);  // ... which may have landed before this arm
    if (s.fixed && drain(s) > 0) continue;
    take_event(s);
  }
}

void f10(bool fixed) {
  run(fixed, progress, {.bursts = 8, .size = 1}, /*wake_up=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  return run_variant(argc, argv, f10);
}

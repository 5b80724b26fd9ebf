// F17 (openucx/ucx issue 11728; linux-rdma/rdma-core PR 1796): missed CQ
// notifications: re-armed and asleep again after one poll.
//
//   field_failure_F17 buggy|fixed
//
// The buggy progress loop asks for more completions than the worker has in
// flight and takes what one ibv_poll_cq returns for all there is; but a
// poll returns at most num_entries (man ibv_poll_cq), a CQ may hold more,
// a device or a layer above it may return fewer (here the plan's
// partial_poll fault), and what stays in the re-armed CQ raises no event.
// The fixed loop polls until empty.
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
      ibv_wc wc[kBatch];
      deliver(s, wc, s.pair.poll(kBatch, wc));  // one poll taken for a drain
    }
    if (stopping(s)) return nullptr;
    take_event(s);
  }
}

void f17(bool fixed) {
  run(fixed, progress, {.bursts = 3, .size = 4}, /*wake_up=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  return run_variant(argc, argv, f17);
}

// F07 (openucx/ucx issue 1039): worker destroy hung: completion events
// acknowledged on the wrong CQ.
//
//   field_failure_F07 buggy|fixed
//
// Two CQs report to one channel. The buggy program acknowledges the event
// of one CQ on the other (and "makes up" for it later with one more ack of
// the right CQ): the second CQ is acknowledged more often than it had
// events, and libibverbs' ibv_destroy_cq waits until the counts are equal
// (the simulated device refuses the destroy with EBUSY instead, and the
// program fails). The fixed program acknowledges the CQ ibv_get_cq_event
// returned.
#include "loopback_pair.h"

namespace {

using field_failures::fail;
using field_failures::Pair;

void f07(bool fixed) {
  Pair p;
  p.arm(p.cq);
  if (p.write(1)) fail("ibv_post_send", errno);
  ibv_cq* got = p.wait();
  ibv_ack_cq_events(fixed ? got : p.other_cq, 1);
  p.poll(16);
  if (!fixed) ibv_ack_cq_events(p.cq, 1);  // the buggy program "makes up" for it later
  p.teardown();
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f07);
}

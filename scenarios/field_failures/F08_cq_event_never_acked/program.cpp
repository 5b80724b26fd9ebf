// F08 (linux-rdma/rdma-core PR 657): teardown without acknowledging a CQ
// event blocked ibv_destroy_cq forever.
//
//   field_failure_F08 buggy|fixed
//
// The buggy program takes a completion event and tears down without
// ibv_ack_cq_events: libibverbs' ibv_destroy_cq waits for the ack forever
// (the simulated device refuses the destroy with EBUSY instead, and the
// program fails). The fixed program acknowledges every event it took.
#include "loopback_pair.h"

namespace {

using field_failures::fail;
using field_failures::Pair;

void f08(bool fixed) {
  Pair p;
  p.arm(p.cq);
  if (p.write(1)) fail("ibv_post_send", errno);
  ibv_cq* got = p.wait();
  p.poll(16);
  if (fixed) ibv_ack_cq_events(got, 1);
  p.teardown();
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f08);
}

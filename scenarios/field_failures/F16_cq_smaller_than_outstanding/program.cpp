// F16 (ROCm/rccl PR 1374; open-mpi/ompi PR 2692; ofiwg/libfabric PR
// 11337): a CQ smaller than the completions its QPs can produce; an
// overrun waiting for scale.
//
//   field_failure_F16 buggy|fixed
//
// Two QPs of 8 send and 8 receive WRs each complete into one CQ: up to 32
// completions can be outstanding. The buggy program sizes the CQ for one
// queue (8); the fixed one for everything its QPs can have outstanding.
// One round of traffic works either way: the overflow comes at scale, and
// the harness reports the sizing itself (resource.cq_too_small).
#include "loopback_pair.h"

namespace {

void f16(bool fixed) {
  field_failures::Pair p(fixed ? 64 : 8, 8);  // two QPs x (8 send + 8 receive) = 32
  p.round(1);
  p.teardown();
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f16);
}

// F18 (kvcache-ai/Mooncake PR 3198, 3299): after a local error the
// transfer engine kept posting to the broken connection: the batch waited
// and reconnects stormed.
//
//   field_failure_F18 buggy|fixed
//
// A transfer loop posts one write after another. The plan fails the first
// (completion_error): the QP is then in ERR and flushes everything posted
// to it until it is reset. The buggy loop keeps posting the rest of the
// batch to it, each flushed in turn (error.post_to_qp_in_err); the fixed
// loop stops at the first error completion and gives the batch up (an
// application would reset or replace the QP).
#include "loopback_pair.h"

namespace {

using field_failures::Pair;

void f18(bool fixed) {
  Pair p;
  if (p.write(1)) field_failures::fail("ibv_post_send", errno);
  ibv_wc wc{};
  while (p.poll(1, &wc) == 0) {
  }
  const bool failed = wc.status != IBV_WC_SUCCESS;
  for (uint64_t i = 2; i < 40 && (!fixed || !failed); ++i) {
    if (p.write(i)) break;
    while (p.poll(1, &wc) == 0) {
    }
  }
  p.teardown();
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f18);
}

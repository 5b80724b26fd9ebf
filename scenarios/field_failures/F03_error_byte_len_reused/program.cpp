// F03 (ofiwg/libfabric PR 5661, issue 5653): a segfault processing an
// error completion: only wr_id is valid, and the code relied on other
// fields.
//
//   field_failure_F03 buggy|fixed
//
// A transfer layer, one thread: when a write completes, it takes what the
// completion says was moved (wc.byte_len) and, when the write failed,
// posts it again with that length. Only wr_id, status, qp_num and
// vendor_err of an error completion are defined (ibv_poll_cq(3)); the plan
// fails the first write (completion_error(rem_access_err) qp#0 nth=1) and
// the simulated device leaves 0xa5a5a5a5 in byte_len, so the retry asks
// for 2.7 GB from an 8-byte buffer (error.poisoned_field_used). The fixed
// layer reads the status first: only a successful completion's fields are
// used, and a failed write is not posted again to a QP in ERR.
#include "loopback_pair.h"

namespace {

using field_failures::Pair;

void f03(bool fixed) {
  Pair p;
  if (p.write(1)) field_failures::fail("ibv_post_send", errno);
  ibv_wc wc{};
  while (p.poll(1, &wc) == 0) {
  }
  // Buggy: "resend what was transferred" with the byte_len of the completion.
  if (!fixed || wc.status == IBV_WC_SUCCESS) {
    const uint32_t length = wc.status == IBV_WC_SUCCESS ? 8 : wc.byte_len;
    (void)p.write(2, length);
  }
  while (p.poll(16) > 0) {
  }
  p.teardown();
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f03);
}

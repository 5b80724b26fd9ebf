// resend_loop: a transfer loop with one known bug, for the minimizer's
// tests. It sends N RDMA WRITEs one at a time and waits for each the
// correct way (drain, arm, poll again, then sleep on the channel and ack),
// so that spurious, coalesced, delayed or partial events and polls are
// harmless to it; but on an error completion the buggy version resends
// "what was transferred", taking the length from the completion's
// byte_len, which ibv_poll_cq(3) leaves undefined unless the status is
// IBV_WC_SUCCESS (field failures F02-F05). The fixed version reports the
// error. Either ends with exit status 1 after an error completion.
//
//   resend_loop buggy|fixed [MESSAGES]
#include "loopback_pair.h"

#include <infiniband/verbs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

using field_failures::fail;
using field_failures::Pair;

int main(int argc, char** argv) {
  const bool fixed = argc >= 2 && std::strcmp(argv[1], "fixed") == 0;
  if (argc < 2 || (!fixed && std::strcmp(argv[1], "buggy") != 0)) {
    std::fprintf(stderr, "usage: resend_loop buggy|fixed [MESSAGES]\n");
    return 2;
  }
  const int messages = argc >= 3 ? std::atoi(argv[2]) : 48;
  Pair p;
  // A batch of completions: whether message `i` is done; an error ends
  // the program.
  auto take = [&](const ibv_wc* wc, int n, int i) {
    bool done = false;
    for (int k = 0; k < n; ++k) {
      if (wc[k].status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "resend_loop: message %llu failed: %s\n",
                     static_cast<unsigned long long>(wc[k].wr_id), ibv_wc_status_str(wc[k].status));
        if (!fixed) (void)p.write(wc[k].wr_id, wc[k].byte_len);  // the bug
        std::exit(1);
      }
      done = done || wc[k].wr_id == static_cast<uint64_t>(i);
    }
    return done;
  };
  for (int i = 1; i <= messages; ++i) {
    if (p.write(i)) fail("ibv_post_send", errno);
    ibv_wc wc[4];
    for (bool done = false; !done;) {
      for (int n; !done && (n = p.poll(4, wc)) > 0;) done = take(wc, n, i);
      if (done) break;
      p.arm(p.cq);
      // A completion that landed before the arm raises no event: poll once
      // more before sleeping (ibv_req_notify_cq(3)).
      if (const int n = p.poll(4, wc); n > 0) {
        done = take(wc, n, i);
        continue;
      }
      ibv_ack_cq_events(p.wait(), 1);
    }
  }
  std::printf("resend_loop: %d messages sent\n", messages);
  p.teardown();
  return 0;
}

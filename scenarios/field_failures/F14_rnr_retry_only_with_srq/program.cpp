// F14 (spdk/spdk issue 2429): the NVMe-oF target asked the host for
// infinite RNR retries (rnr_retry_count 7 in its connection reply) only
// when it used a shared receive queue; with plain receive queues the host
// kept the default of 0, and connections failed with "RNR retry counter
// exceeded".
//
//   field_failure_F14 buggy|fixed
//
// One thread drives both ends, as a loopback test does: the target (QP b)
// decides the host's rnr_retry in its connection reply, posts 2 receives
// and processes commands, posting each receive again after its command;
// the host (QP a) sends a burst of 4 commands. The third finds no receive
// posted: the responder answers with an RNR NAK (IBA 9.7.5.2.8), and the
// host retries it rnr_retry times. The simulated device really NAKs and
// retries on its virtual clock, so no fault is injected (rules: []): the
// buggy target uses receive queues and replies rnr_retry 0, the host's
// SEND ends in IBV_WC_RNR_RETRY_EXC_ERR, the QP in ERR, and the host
// reports the failed connection (exit status 1). The fixed target replies
// 7 whatever its receive queues: the host retries until the target has
// posted the receive again.
#include "loopback_pair.h"

namespace {

using field_failures::fail;
using field_failures::Pair;

constexpr uint64_t kCommands = 4;
constexpr unsigned kReceives = 2;
constexpr uint64_t kFirstReceive = 1000;

// What the target tells the host in its reply to the connection request.
struct ConnectionReply {
  uint8_t rnr_retry_count = 0;
};

ConnectionReply reply(bool fixed, bool shared_receive_queue) {
  ConnectionReply r;
  if (fixed || shared_receive_queue) r.rnr_retry_count = 7;  // buggy: only with an SRQ
  return r;
}

void f14(bool fixed) {
  const ConnectionReply r = reply(fixed, /*shared_receive_queue=*/false);
  Pair p(64, 8, r.rnr_retry_count);
  for (unsigned slot = 0; slot < kReceives; ++slot)
    if (p.receive(p.b, kFirstReceive + slot, slot)) fail("ibv_post_recv", errno);
  for (uint64_t c = 1; c <= kCommands; ++c)
    if (p.send(p.a, c)) fail("ibv_post_send", errno);
  for (uint64_t done = 0; done < kCommands;) {
    ibv_wc wc[16];
    const int n = p.poll(16, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "field_failure_F14: command %llu failed: %s: connection lost\n",
                     static_cast<unsigned long long>(wc[i].wr_id), ibv_wc_status_str(wc[i].status));
        std::exit(1);
      }
      if (wc[i].qp_num == p.b->qp_num) {  // a command arrived: its receive again
        if (p.receive(p.b, wc[i].wr_id, unsigned(wc[i].wr_id - kFirstReceive)))
          fail("ibv_post_recv", errno);
      } else {
        ++done;
      }
    }
  }
  p.teardown();
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f14);
}

// F06 (ceph/ceph PR 25447): before destroying a QP the messenger moved it
// to ERR and posted a "beacon" work request, then waited for the beacon's
// completion as the sign that everything before it was flushed. On an
// iWARP NIC the beacon was never flushed, and the drain hung.
//
//   field_failure_F06 buggy|fixed
//
// One thread: a connection with writes in flight is closed: the QP goes
// to ERR, then the drain. The buggy drain posts the beacon and sleeps on
// the channel until the beacon's completion comes back; it takes for
// granted that a work request posted to a QP in ERR is flushed. A device
// is not bound to take it: the plan has the device refuse the beacon
// (verb_failure(post_send,EINVAL) qp#0 nth=4, the fourth send work
// request, as an iWARP device that does not accept work requests in ERR),
// and the drain, which never looked at the post's result, waits for a
// completion that cannot come. The fixed drain posts nothing: it counts
// the work requests it posted before the ERR transition and polls until
// each has completed (flushed or not), which IBA 10.7.3.1 guarantees.
#include "loopback_pair.h"

namespace {

using field_failures::fail;
using field_failures::Pair;

constexpr uint64_t kInFlight = 3;
constexpr uint64_t kBeacon = 0xbeac0;

void f06(bool fixed) {
  Pair p;
  for (uint64_t i = 1; i <= kInFlight; ++i)
    if (p.write(i)) fail("ibv_post_send", errno);
  // Close the connection: the QP to ERR, then drain.
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (ibv_modify_qp(p.a, &attr, IBV_QP_STATE)) fail("ibv_modify_qp(ERR)", errno);
  uint64_t outstanding = kInFlight;
  bool beacon_seen = false;
  if (!fixed) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(p.buffer), 0, p.mr->lkey};
    ibv_send_wr beacon{};
    beacon.wr_id = kBeacon;
    beacon.sg_list = &sge;
    beacon.num_sge = 1;
    beacon.opcode = IBV_WR_SEND;
    beacon.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    (void)ibv_post_send(p.a, &beacon, &bad);  // "it will come back flushed"
  }
  // Arm, poll until empty, sleep: until the beacon came back (buggy) or
  // every work request posted before the ERR transition did (fixed).
  p.arm(p.cq);
  for (;;) {
    ibv_wc wc[16];
    for (int n; (n = p.poll(16, wc)) > 0;)
      for (int i = 0; i < n; ++i) {
        if (wc[i].wr_id == kBeacon)
          beacon_seen = true;
        else
          --outstanding;
      }
    if (fixed ? outstanding == 0 : beacon_seen) break;
    ibv_ack_cq_events(p.wait(), 1);
    p.arm(p.cq);
  }
  p.teardown();
  std::printf("field_failure_F06: drained\n");
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f06);
}

// field_failures: small programs that commit the mistakes the runtime
// checks exist for, each with its corrected version: one scenario per check
// that no field-failure program (F01_flush_lost/ ... F22_.../, their README.md) shows on its own
// or shows only under some interleavings (a one-thread, deterministic
// version of it here).
//
//   field_failures SCENARIO buggy|fixed
//
// Plain libibverbs, one thread, one RC QP pair in loopback on the first
// device; run under `verbfault run` (some scenarios need a fault plan, see
// harness/tests/test_field_failures.cpp). The buggy version is caught by a
// runtime check of the harness; the fixed one runs clean. Exit status 0
// when the program itself saw nothing wrong, 1 when a verb failed, 2 for a
// usage error.
#include "loopback_pair.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <functional>
#include <map>
#include <string>

namespace {

using field_failures::fail;
using field_failures::Pair;

// liveness.blocked_forever (the check behind F09, whose program is
// F09_join_waits_for_sleeping_thread/program.cpp): at teardown, waiting for the completion of a work
// request that was never posted (the fixed version waits only for what it
// posted).
void blocked_forever(bool fixed) {
  Pair p;
  p.round(1);
  const uint64_t awaited = fixed ? 2 : 99;
  if (p.write(2)) fail("ibv_post_send", errno);
  for (bool found = false; !found;) {
    ibv_ack_cq_events(p.wait(), 1);
    p.arm(p.cq);
    ibv_wc wc[16];
    for (int n; (n = p.poll(16, wc)) > 0;)
      for (int i = 0; i < n; ++i) found = found || wc[i].wr_id == awaited;
  }
  p.teardown();
}

// poll.stranded_between_poll_and_arm (the check behind F10/F11, whose
// programs take two threads): a completion lands between the last empty
// poll and the re-arm, and the program waits without polling again.
void stranded(bool fixed) {
  Pair p;
  p.round(1);  // events in use; the CQ is re-armed and drained
  if (p.write(2)) fail("ibv_post_send", errno);
  ibv_ack_cq_events(p.wait(), 1);  // the event of write 2
  while (p.poll(16) > 0) {
  }                                              // up to date: the last poll found nothing ...
  if (p.write(3)) fail("ibv_post_send", errno);  // ... and now a completion lands
  p.arm(p.cq);  // armed after it landed: the arm covers the NEXT completion only
  if (fixed) {
    while (p.poll(16) > 0) {
    }  // poll once more after arming: write 3 is found
  } else {
    ibv_ack_cq_events(p.wait(), 1);  // asleep: write 3 is stranded
  }
  p.teardown();
}

// poll.wait_without_drain (the check behind F12/F17): one completion
// polled per event while several arrived.
void wait_without_drain(bool fixed) {
  Pair p;
  p.arm(p.cq);
  if (p.write(1) || p.write(2)) fail("ibv_post_send", errno);
  ibv_ack_cq_events(p.wait(), 1);
  p.arm(p.cq);
  if (fixed) {
    while (p.poll(16) > 0) {
    }
    if (p.write(3)) fail("ibv_post_send", errno);
    ibv_ack_cq_events(p.wait(), 1);
  } else {
    p.poll(1);                       // one of two
    ibv_ack_cq_events(p.wait(), 1);  // the other completion raises no event
  }
  while (p.poll(16) > 0) {
  }
  p.teardown();
}

// event.not_rearmed (the check behind F13): an event with no completion
// behind it (run with spurious_cq_event cq#0 nth=2): the buggy program
// does not re-arm when the poll finds nothing, and waits.
void not_rearmed(bool fixed) {
  Pair p;
  p.round(1);  // the second arm of round() is answered by a spurious event
  ibv_cq* got = p.wait();
  ibv_ack_cq_events(got, 1);
  const int found = p.poll(16);
  if (found == 0 && !fixed) {
    // "nothing there: ignore the event" -- and forget to re-arm.
  } else {
    p.arm(p.cq);
  }
  if (p.write(2)) fail("ibv_post_send", errno);
  if (fixed) {
    ibv_ack_cq_events(p.wait(), 1);
    while (p.poll(16) > 0) {
    }
  } else {
    ibv_ack_cq_events(p.wait(), 1);  // no event can come: the CQ is not armed
  }
  p.teardown();
}

// Two CQs on one channel, armed on demand, as event loops do: the send CQ
// is armed only while sends are outstanding, the receive CQ always. The
// fixed program waits for a receive with its send CQ rightly unarmed (the
// wait can be ended by the armed receive CQ); the buggy one forgets to arm
// the receive CQ too, so no CQ of the channel can end the wait.
void arm_on_demand(bool fixed) {
  Pair p;
  // c sends on its own send CQ (other_cq) to d, whose receives complete on cq.
  auto make = [&](ibv_cq* send_cq) {
    ibv_qp_init_attr init{};
    init.send_cq = send_cq;
    init.recv_cq = p.cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 8;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(p.pd, &init);
    if (!qp) fail("ibv_create_qp", errno);
    return qp;
  };
  ibv_qp* c = make(p.other_cq);
  ibv_qp* d = make(p.cq);
  ibv_port_attr port{};
  if (ibv_query_port(p.ctx, 1, &port)) fail("ibv_query_port", errno);
  Pair::connect(c, d->qp_num, port.lid);
  Pair::connect(d, c->qp_num, port.lid);
  auto send = [&](uint64_t wr_id, unsigned flags) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(p.buffer), 8, p.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = flags;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(c, &wr, &bad)) fail("ibv_post_send", errno);
  };
  auto receive = [&](uint64_t wr_id) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(p.buffer + 1024), 64, p.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(d, &wr, &bad)) fail("ibv_post_recv", errno);
  };
  ibv_wc wc[4];
  // A signaled send: arm its CQ while it is outstanding, take its event.
  receive(1);
  p.arm(p.other_cq);
  send(1, IBV_SEND_SIGNALED);
  ibv_ack_cq_events(p.wait(), 1);
  while (ibv_poll_cq(p.other_cq, 4, wc) > 0) {
  }
  while (p.poll(4) > 0) {
  }
  // Nothing outstanding on the send side: its CQ stays unarmed. Wait for
  // the next receive.
  receive(2);
  if (fixed) p.arm(p.cq);
  send(2, 0);
  ibv_ack_cq_events(p.wait(), 1);
  while (p.poll(4) > 0) {
  }
  ibv_destroy_qp(c);
  ibv_destroy_qp(d);
  p.teardown();
}

// liveness.posting_to_qp_in_err (F18, the reconnect storm's shape, whose
// program is F18_posting_after_error/program.cpp): a failed WRITE is re-posted until it
// succeeds, on a QP that an error moved to ERR, where every post is
// flushed: the loop never ends. The fixed version gives up on the QP (an
// application would reset or replace it). Run with
// completion_error(...) qp#0 nth=1.
void retry_forever(bool fixed) {
  Pair p;
  ibv_wc wc{};
  for (uint64_t attempt = 1;; ++attempt) {
    if (p.write(attempt)) fail("ibv_post_send", errno);
    while (p.poll(1, &wc) == 0) {
    }
    if (wc.status == IBV_WC_SUCCESS || fixed) break;
  }
  p.teardown();
}

// A receive on b: the call at which `async_event(qp_fatal) qp#1 nth=4`
// raises the event (b's calls: three modify_qp to connect it, then this).
void receive_on_b(Pair& p) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(p.buffer + 1024), 64, p.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = 9;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  (void)ibv_post_recv(p.b, &wr, &bad);
}

// An async event taken and never acknowledged before its QP is destroyed
// (libibverbs' destroy_qp waits for the ack). Run with
// async_event(qp_fatal) qp#1 nth=4.
void async_unacked(bool fixed) {
  Pair p;
  receive_on_b(p);
  ibv_async_event event{};
  if (ibv_get_async_event(p.ctx, &event)) fail("ibv_get_async_event", errno);
  if (fixed) ibv_ack_async_event(&event);
  if (ibv_destroy_qp(p.b) == 0)
    p.b = Pair::make_qp(p.pd, p.cq, p.cq, 8);  // refused while unacknowledged
  if (!fixed) ibv_ack_async_event(&event);
  p.teardown();
}

// The same event acknowledged twice.
void async_overacked(bool fixed) {
  Pair p;
  receive_on_b(p);
  ibv_async_event event{};
  if (ibv_get_async_event(p.ctx, &event)) fail("ibv_get_async_event", errno);
  ibv_ack_async_event(&event);
  if (!fixed) ibv_ack_async_event(&event);
  p.teardown();
}

// Only unsignaled sends: the send queue is never reclaimed.
void unsignaled(bool fixed) {
  Pair p(64, 8);
  for (uint64_t i = 1; i <= 8; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(p.buffer), 8, p.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    // The fixed program signals every 4th send (and polls its completion).
    wr.send_flags = fixed && i % 4 == 0 ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(p.buffer + 2048);
    wr.wr.rdma.rkey = p.mr->rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(p.a, &wr, &bad)) fail("ibv_post_send", errno);
    if (fixed && i % 4 == 0)
      while (p.poll(16) == 0) {
      }
  }
  p.teardown();
}

// Destroying a CQ while its QPs still use it.
void destroy_order(bool fixed) {
  Pair p;
  if (!fixed) ibv_destroy_cq(p.cq);  // EBUSY: the QPs use it
  p.teardown();
}

// Polling forever for the completion of a WR that was never posted.
void spin(bool fixed) {
  Pair p;
  if (p.write(1)) fail("ibv_post_send", errno);
  const uint64_t awaited = fixed ? 1 : 2;
  for (bool found = false; !found;) {
    ibv_wc wc[4];
    const int n = p.poll(4, wc);
    for (int i = 0; i < n; ++i) found = found || wc[i].wr_id == awaited;
  }
  p.teardown();
}

// Resources left behind at exit.
void leak(bool fixed) {
  Pair p;
  p.round(1);
  if (fixed) p.teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void(bool)>> scenarios = {
      {"retry_forever", retry_forever},
      {"arm_on_demand", arm_on_demand},
      {"blocked_forever", blocked_forever},
      {"stranded", stranded},
      {"wait_without_drain", wait_without_drain},
      {"not_rearmed", not_rearmed},
      {"leak", leak},
      {"async_unacked", async_unacked},
      {"async_overacked", async_overacked},
      {"unsignaled", unsignaled},
      {"destroy_order", destroy_order},
      {"spin", spin},
  };
  const std::string variant = argc == 3 ? argv[2] : "";
  auto scenario = argc == 3 ? scenarios.find(argv[1]) : scenarios.end();
  if (scenario == scenarios.end() || (variant != "buggy" && variant != "fixed")) {
    std::fprintf(stderr, "usage: field_failures SCENARIO buggy|fixed (SCENARIO: ");
    for (const auto& [name, run] : scenarios) std::fprintf(stderr, "%s ", name.c_str());
    std::fprintf(stderr, ")\n");
    return 2;
  }
  scenario->second(variant == "fixed");
  std::printf("field_failures: %s %s: done\n", argv[1], variant.c_str());
  return 0;
}

// The two classic completion-channel races that need time to pass while a
// thread is held (issue 34), each as a buggy and a fixed client, with a
// peer thread that thinks before it answers:
//
//   stranded       the client polls, finds nothing, arms the CQ and sleeps
//                  in ibv_get_cq_event without polling again: an answer
//                  that landed between the empty poll and the arm raises no
//                  event (ibv_req_notify_cq(3): only completions after the
//                  arm do), and the client sleeps forever (brpc #3415,
//                  libfabric #796, UCX #11728, rdma-core PR 1796). Fixed:
//                  poll again after arming.
//   one_per_event  the peer answers each request with two messages; the
//                  client takes one completion per event: two completions
//                  behind one event leave the second unread, and the client
//                  sleeps forever (perftest #137). Fixed: drain the CQ after
//                  each event.
//
//   think_time_races stranded|one_per_event buggy|fixed [THINK_US [ROUNDS]]
// THINK_US: the peer's think time in usleep(3) before answering (300 by
// default); ROUNDS: requests (20). Exit 0 with "think_time_races: ROUNDS
// rounds" when every answer was taken; the buggy client's hang is the
// harness's to find (liveness checks, or the run's timeout).
#include "loopback_pair.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using field_failures::fail;
using field_failures::Pair;

constexpr uint32_t kMessage = 64;

struct Side {
  ibv_cq* cq = nullptr;       // receives (the client's reports to the channel)
  ibv_cq* send_cq = nullptr;  // sends, reaped as the side posts more
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  char buffer[4 * kMessage] = {};  // [0, kMessage): sends; then receives
};

ibv_qp* make_qp(ibv_pd* pd, ibv_cq* send_cq, ibv_cq* recv_cq) {
  ibv_qp_init_attr init{};
  init.send_cq = send_cq;
  init.recv_cq = recv_cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 8;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  if (qp == nullptr) fail("ibv_create_qp", errno);
  return qp;
}

void post_receive(Side& side, int slot) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(side.buffer + kMessage * (1 + slot)), kMessage,
              side.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = static_cast<uint64_t>(slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int err = ibv_post_recv(side.qp, &wr, &bad)) fail("ibv_post_recv", err);
}

// A signaled SEND, into the side's send CQ (apart from its receives: every
// completion the client's channel announces is an answer); the sends done
// so far are reaped first, which frees their slots.
void post_send(Side& side) {
  ibv_wc done[8];
  int reaped = 0;
  while ((reaped = ibv_poll_cq(side.send_cq, 8, done)) > 0)
    for (int i = 0; i < reaped; ++i)
      if (done[i].status != IBV_WC_SUCCESS) fail("a send", EIO);
  ibv_sge sge{reinterpret_cast<uintptr_t>(side.buffer), kMessage, side.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(side.qp, &wr, &bad)) fail("ibv_post_send", err);
}

void check(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) {
    std::fprintf(stderr, "think_time_races: completion: %s\n", ibv_wc_status_str(wc.status));
    std::exit(1);
  }
}

struct Peer {
  Side* side;
  int rounds;
  int answers;  // per request
  int think_us;
};

// Busy-polls for each request, thinks, answers.
void* answer(void* argument) {
  Peer& peer = *static_cast<Peer*>(argument);
  for (int round = 0; round < peer.rounds; ++round) {
    ibv_wc wc{};
    int n = 0;
    while ((n = ibv_poll_cq(peer.side->cq, 1, &wc)) == 0) {
    }
    if (n < 0) fail("ibv_poll_cq", EIO);
    check(wc);
    if (round + 1 < peer.rounds) post_receive(*peer.side, 0);
    usleep(static_cast<useconds_t>(peer.think_us));
    for (int i = 0; i < peer.answers; ++i) post_send(*peer.side);
  }
  return nullptr;
}

// Waits for the next event of `cq`'s channel and acknowledges it.
void wait_event(ibv_comp_channel* channel) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(channel, &cq, &context)) fail("ibv_get_cq_event", errno);
  ibv_ack_cq_events(cq, 1);
}

// One answer of `wanted` taken: the client's loop, buggy or fixed.
void take_answers(Side& client, ibv_comp_channel* channel, bool stranded, bool fixed, int wanted) {
  int taken = 0;
  ibv_wc wc[4];
  if (stranded) {
    while (taken < wanted) {
      const int n = ibv_poll_cq(client.cq, 4, wc);
      if (n < 0) fail("ibv_poll_cq", EIO);
      for (int i = 0; i < n; ++i) check(wc[i]);
      taken += n;
      if (n > 0) continue;
      if (int err = ibv_req_notify_cq(client.cq, 0)) fail("ibv_req_notify_cq", err);
      if (fixed) {
        // ibv_get_cq_event(3): poll after arming, or what came between the
        // empty poll and the arm is never announced.
        const int late = ibv_poll_cq(client.cq, 4, wc);
        if (late < 0) fail("ibv_poll_cq", EIO);
        for (int i = 0; i < late; ++i) check(wc[i]);
        taken += late;
        if (late > 0) continue;
      }
      wait_event(channel);
    }
    return;
  }
  // One completion per event (buggy: the loop of perftest #137, armed
  // once before the request), or every completion behind each event, with
  // a poll after the re-arm (fixed).
  while (taken < wanted) {
    wait_event(channel);
    if (int err = ibv_req_notify_cq(client.cq, 0)) fail("ibv_req_notify_cq", err);
    int n = 0;
    do {
      n = ibv_poll_cq(client.cq, fixed ? 4 : 1, wc);
      if (n < 0) fail("ibv_poll_cq", EIO);
      for (int i = 0; i < n; ++i) check(wc[i]);
      taken += n;
    } while (fixed && n > 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string shape = argc > 1 ? argv[1] : "";
  const std::string version = argc > 2 ? argv[2] : "";
  const int think_us = argc > 3 ? std::atoi(argv[3]) : 300;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 20;
  if ((shape != "stranded" && shape != "one_per_event") ||
      (version != "buggy" && version != "fixed") || think_us < 0 || rounds <= 0) {
    std::fprintf(
        stderr, "usage: think_time_races stranded|one_per_event buggy|fixed [THINK_US [ROUNDS]]\n");
    return 2;
  }
  const bool stranded = shape == "stranded";
  const bool fixed = version == "fixed";
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) fail("ibv_get_device_list", ENODEV);
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (ctx == nullptr) fail("ibv_open_device", errno);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_comp_channel* channel = ibv_create_comp_channel(ctx);
  if (pd == nullptr || channel == nullptr) fail("setup", errno);
  Side client, peer_side;
  client.cq = ibv_create_cq(ctx, 16, nullptr, channel, 0);
  peer_side.cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  client.send_cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  peer_side.send_cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  if (!client.cq || !peer_side.cq || !client.send_cq || !peer_side.send_cq)
    fail("ibv_create_cq", errno);
  for (Side* side : {&client, &peer_side}) {
    side->qp = make_qp(pd, side->send_cq, side->cq);
    side->mr = ibv_reg_mr(pd, side->buffer, sizeof side->buffer, IBV_ACCESS_LOCAL_WRITE);
    if (side->mr == nullptr) fail("ibv_reg_mr", errno);
  }
  ibv_port_attr port{};
  if (ibv_query_port(ctx, 1, &port)) fail("ibv_query_port", errno);
  ibv_gid gid{};
  const ibv_gid* grh = nullptr;
  if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
    if (ibv_query_gid(ctx, 1, Pair::kRoceGidIndex, &gid)) fail("ibv_query_gid", errno);
    grh = &gid;
  }
  Pair::connect(client.qp, peer_side.qp->qp_num, port.lid, 7, grh);
  Pair::connect(peer_side.qp, client.qp->qp_num, port.lid, 7, grh);

  const int answers = stranded ? 1 : 2;
  post_receive(peer_side, 0);
  Peer peer{&peer_side, rounds, answers, think_us};
  pthread_t thread;
  if (int err = pthread_create(&thread, nullptr, answer, &peer)) fail("pthread_create", err);
  if (!stranded)
    if (int err = ibv_req_notify_cq(client.cq, 0)) fail("ibv_req_notify_cq", err);
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < answers; ++i) post_receive(client, i);
    post_send(client);
    take_answers(client, channel, stranded, fixed, answers);
  }
  pthread_join(thread, nullptr);
  for (Side* side : {&client, &peer_side}) {
    ibv_destroy_qp(side->qp);
    ibv_dereg_mr(side->mr);
  }
  for (Side* side : {&client, &peer_side}) {
    ibv_destroy_cq(side->cq);
    ibv_destroy_cq(side->send_cq);
  }
  ibv_destroy_comp_channel(channel);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  std::printf("think_time_races: %d rounds\n", rounds);
  return 0;
}

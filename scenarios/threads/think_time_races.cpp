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
#include "loopback_sides.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using threads::check;
using threads::fail;
using threads::LoopbackSides;
using threads::Side;

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
    if (round + 1 < peer.rounds) peer.side->post_receive(0);
    usleep(static_cast<useconds_t>(peer.think_us));
    for (int i = 0; i < peer.answers; ++i) peer.side->post_send(0);
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
  LoopbackSides sides(/*separate_sends=*/true);
  Side& client = sides.client;
  Side& peer_side = sides.peer;

  const int answers = stranded ? 1 : 2;
  peer_side.post_receive(0);
  Peer peer{&peer_side, rounds, answers, think_us};
  pthread_t thread;
  if (int err = pthread_create(&thread, nullptr, answer, &peer)) fail("pthread_create", err);
  if (!stranded)
    if (int err = ibv_req_notify_cq(client.cq, 0)) fail("ibv_req_notify_cq", err);
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < answers; ++i) client.post_receive(i);
    client.post_send(0);
    take_answers(client, sides.channel, stranded, fixed, answers);
  }
  pthread_join(thread, nullptr);
  std::printf("think_time_races: %d rounds\n", rounds);
  return 0;
}

// Two threads of one process in the shape RDMA servers have (issue 34):
// a server thread that busy-polls its CQ and answers each request, and a
// client in an event loop (ibv_req_notify_cq, ibv_get_cq_event, then poll
// until empty) that sends a request and waits for its answer, N times.
// A correct program: it ends with "polling_server: N round trips" and exit
// 0 whatever the schedule; on a real provider the answers come at the
// provider's pace, so its wall time says what a scheduler costs.
//
//   polling_server [ROUND_TRIPS [THINK_US [WAIT]]]
// ROUND_TRIPS: 200 by default; THINK_US: the server's think time in
// usleep(3) before each answer, 0 by default; WAIT: how the client waits
// for its channel: `event` (ibv_get_cq_event, the default), `poll` (poll(2)
// on the channel's fd with a 100 ms timeout, then ibv_get_cq_event) or
// `epoll` (epoll_wait(2) likewise), or `progress` (a progress thread
// busy-polls the client's CQ and wakes the client through a condition
// variable: the worker + progress thread shape of UCX and libfabric).
#include "loopback_sides.h"

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using threads::check;
using threads::fail;
using threads::LoopbackSides;
using threads::Side;

struct Server {
  Side* side;
  int round_trips;
  int think_us;
};

// Busy-polls; answers request i with i + 1000.
void* serve(void* argument) {
  Server& server = *static_cast<Server*>(argument);
  Side& side = *server.side;
  int answered = 0, sends_done = 0;
  while (answered < server.round_trips || sends_done < answered) {
    ibv_wc wc[4];
    const int n = ibv_poll_cq(side.cq, 4, wc);
    if (n < 0) fail("ibv_poll_cq", EIO);
    for (int i = 0; i < n; ++i) {
      check(wc[i]);
      if (wc[i].opcode == IBV_WC_SEND) {
        ++sends_done;
        continue;
      }
      const uint32_t request = side.received();
      if (request != static_cast<uint32_t>(answered)) {
        std::fprintf(stderr, "polling_server: request %u, expected %d\n", request, answered);
        std::exit(1);
      }
      ++answered;
      if (answered < server.round_trips) side.post_receive();
      if (server.think_us > 0) usleep(static_cast<useconds_t>(server.think_us));
      side.post_send(request + 1000);
    }
  }
  return nullptr;
}

// The progress thread of WAIT=progress: polls the client's CQ and hands
// what it found to the worker (the main thread) under `lock`.
struct Progress {
  Side* side;
  int round_trips;
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
  int sends_done = 0;        // guarded by lock
  int answers = 0;           // guarded by lock
  uint32_t last_answer = 0;  // guarded by lock
};

void* progress(void* argument) {
  Progress& p = *static_cast<Progress*>(argument);
  for (;;) {
    pthread_mutex_lock(&p.lock);
    const bool done = p.answers == p.round_trips && p.sends_done == p.round_trips;
    pthread_mutex_unlock(&p.lock);
    if (done) return nullptr;
    ibv_wc wc[4];
    const int n = ibv_poll_cq(p.side->cq, 4, wc);
    if (n < 0) fail("ibv_poll_cq", EIO);
    if (n == 0) continue;
    pthread_mutex_lock(&p.lock);
    for (int i = 0; i < n; ++i) {
      check(wc[i]);
      if (wc[i].opcode == IBV_WC_SEND) {
        ++p.sends_done;
      } else {
        ++p.answers;
        p.last_answer = p.side->received();
      }
    }
    pthread_cond_broadcast(&p.changed);
    pthread_mutex_unlock(&p.lock);
  }
}

// The worker of WAIT=progress: each request, then its answer and its
// send's completion, told by the progress thread.
int run_with_progress_thread(Side& client, int round_trips) {
  Progress p{&client, round_trips};
  pthread_t thread;
  if (int err = pthread_create(&thread, nullptr, progress, &p)) fail("pthread_create", err);
  for (int i = 0; i < round_trips; ++i) {
    client.post_receive();
    client.post_send(static_cast<uint32_t>(i));
    pthread_mutex_lock(&p.lock);
    while (p.answers <= i || p.sends_done <= i) pthread_cond_wait(&p.changed, &p.lock);
    const uint32_t answer = p.last_answer;
    pthread_mutex_unlock(&p.lock);
    if (answer != static_cast<uint32_t>(i) + 1000) {
      std::fprintf(stderr, "polling_server: answer %u to request %d\n", answer, i);
      return 1;
    }
  }
  pthread_join(thread, nullptr);
  return 0;
}

// The client's event loop: arm, then poll until empty, and wait for an
// event only when the poll after the arm found nothing (ibv_get_cq_event(3)).
int run_event_loop(Side& client, ibv_comp_channel* channel, const std::string& wait,
                   int round_trips) {
  if (int err = ibv_req_notify_cq(client.cq, 0)) fail("ibv_req_notify_cq", err);
  int epoll = -1;
  if (wait == "epoll") {
    epoll = epoll_create1(EPOLL_CLOEXEC);
    epoll_event interest{};
    interest.events = EPOLLIN;
    if (epoll < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, channel->fd, &interest) != 0)
      fail("epoll", errno);
  }
  int unacked = 0;
  for (int i = 0; i < round_trips; ++i) {
    client.post_receive();
    client.post_send(static_cast<uint32_t>(i));
    bool answered = false, sent = false;
    while (!answered || !sent) {
      ibv_wc wc[4];
      const int got = ibv_poll_cq(client.cq, 4, wc);
      if (got < 0) fail("ibv_poll_cq", EIO);
      for (int k = 0; k < got; ++k) {
        check(wc[k]);
        if (wc[k].opcode == IBV_WC_SEND) {
          sent = true;
        } else {
          if (client.received() != static_cast<uint32_t>(i) + 1000) {
            std::fprintf(stderr, "polling_server: answer %u to request %d\n", client.received(), i);
            return 1;
          }
          answered = true;
        }
      }
      if (got > 0 || (answered && sent)) continue;
      if (wait == "poll") {
        pollfd readable{channel->fd, POLLIN, 0};
        if (::poll(&readable, 1, 100) == 0) continue;  // timed out: poll the CQ again
      } else if (wait == "epoll") {
        epoll_event ready{};
        if (epoll_wait(epoll, &ready, 1, 100) == 0) continue;
      }
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      if (ibv_get_cq_event(channel, &cq, &context)) fail("ibv_get_cq_event", errno);
      ++unacked;
      if (int err = ibv_req_notify_cq(client.cq, 0)) fail("ibv_req_notify_cq", err);
    }
  }
  if (epoll >= 0) close(epoll);
  ibv_ack_cq_events(client.cq, unacked);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int round_trips = argc > 1 ? std::atoi(argv[1]) : 200;
  const int think_us = argc > 2 ? std::atoi(argv[2]) : 0;
  const std::string wait = argc > 3 ? argv[3] : "event";
  if (wait != "event" && wait != "poll" && wait != "epoll" && wait != "progress") {
    std::fprintf(stderr, "polling_server: WAIT '%s': expected event, poll, epoll or progress\n",
                 wait.c_str());
    return 2;
  }
  if (round_trips <= 0 || think_us < 0) {
    std::fprintf(stderr,
                 "polling_server: ROUND_TRIPS '%s' THINK_US '%s': expected a positive number "
                 "and a number of microseconds\n",
                 argv[1], argc > 2 ? argv[2] : "0");
    return 2;
  }
  LoopbackSides sides(/*separate_sends=*/false);
  Side& client = sides.client;
  Side& server_side = sides.peer;

  server_side.post_receive();
  Server server{&server_side, round_trips, think_us};
  pthread_t thread;
  if (int err = pthread_create(&thread, nullptr, serve, &server)) fail("pthread_create", err);

  // A failure ends the process as it is (std::exit): the server thread
  // may still poll what a return would destroy.
  if (wait == "progress") {
    if (run_with_progress_thread(client, round_trips) != 0) std::exit(1);
  } else if (run_event_loop(client, sides.channel, wait, round_trips) != 0) {
    std::exit(1);
  }
  pthread_join(thread, nullptr);
  std::printf("polling_server: %d round trips\n", round_trips);
  return 0;
}

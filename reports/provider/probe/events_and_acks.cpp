// Completion events and their acknowledgement (ibv_req_notify_cq(3),
// ibv_get_cq_event(3); IBA 11.4.2.2): an armed CQ raises one event for the
// next completion, then is disarmed; with solicited_only, only for a
// receive of a message with the Solicited Event bit or a completion in
// error; ibv_get_cq_event returns the CQ and its cq_context; on a
// non-blocking channel it fails with EAGAIN when nothing is pending; and
// "destroying a CQ will wait for all completion events to be acknowledged".
#include "areas.h"
#include "bounded.h"
#include "verbs_kit.h"

#include <fcntl.h>

#include <cstdio>

namespace verbfault::probe {

namespace {

const std::string kNotify = "ibv_req_notify_cq(3); IBA 11.4.2.2";

// Two connected RC QPs; b's CQ on a completion channel.
struct Evented {
  std::unique_ptr<Device> dev;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq_a = nullptr;
  ibv_cq* cq_b = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  std::unique_ptr<Buffer> buffer;
  std::string why;
};

int g_cq_context_tag;  // its address is the cq_context

Evented make_evented(const std::string& device) {
  Evented e;
  e.dev = open_device(device, &e.why);
  if (!e.dev) return e;
  e.channel = ibv_create_comp_channel(e.dev->ctx);
  e.cq_a = ibv_create_cq(e.dev->ctx, 64, nullptr, nullptr, 0);
  e.cq_b = e.channel ? ibv_create_cq(e.dev->ctx, 64, &g_cq_context_tag, e.channel, 0) : nullptr;
  e.buffer = make_buffer(*e.dev, 256);
  if (e.cq_a && e.cq_b && e.buffer) {
    e.a = create_qp(*e.dev, {.send_cq = e.cq_a, .recv_cq = e.cq_a});
    e.b = create_qp(*e.dev, {.send_cq = e.cq_b, .recv_cq = e.cq_b});
  }
  if (e.a == nullptr || e.b == nullptr || connect_pair(*e.dev, e.a, e.b) != 0) {
    e.why = "could not set up two RC QPs with a completion channel";
    e.a = nullptr;
  }
  return e;
}

// One SEND from a to b (b has a receive posted), a's completion polled.
bool send_one(Evented& e, uint64_t wr_id, unsigned flags) {
  if (post_recv(e.b, *e.buffer, 256, wr_id) != 0) return false;
  if (post_send(e.a, IBV_WR_SEND, *e.buffer, 8, wr_id, IBV_SEND_SIGNALED | flags) != 0)
    return false;
  return poll_for(e.cq_a, 1, kPositiveMs).wcs.size() == 1;
}

std::string yes_no(ibv_cq* cq, const std::string& what) {
  return cq != nullptr ? what : "no " + what;
}

}  // namespace

void probe_events_and_acks(const std::string& device, CheckSink& sink) {
  // First, in a child of its own: the destroy that may never return.
  const About destroy_unacked{"events_and_acks.destroy_cq_unacked",
                              "ibv_destroy_cq with one completion event taken and not acknowledged",
                              "ibv_get_cq_event(3)",
                              "waits for the acknowledgement (the probe gives up after 5 s)"};
  const Bounded run = run_bounded(
      [&](int fd) {
        Evented e = make_evented(device);
        if (e.a == nullptr || ibv_req_notify_cq(e.cq_b, 0) != 0 || !send_one(e, 1, 0) ||
            wait_cq_event(e.channel, kPositiveMs) != e.cq_b) {
          dprintf(fd, "setup\n");
          return;
        }
        poll_for(e.cq_b, 1, kPositiveMs);
        ibv_destroy_qp(e.b);
        dprintf(fd, "ready\n");
        dprintf(fd, "%d\n", ibv_destroy_cq(e.cq_b));
      },
      kPositiveMs + 2000);
  sink.add(destroy_with_unacked_event(destroy_unacked, run, "could not take a completion event"));

  const About arm{"events_and_acks.event_for_next_completion",
                  "an armed CQ raises an event for the next completion", kNotify,
                  "one event, naming the CQ and its cq_context"};
  const About once{"events_and_acks.one_event_per_arm", "a second completion without re-arming",
                   kNotify, "no event"};
  const About unsolicited{"events_and_acks.solicited_only_skips_unsolicited",
                          "armed solicited-only, a receive without IBV_SEND_SOLICITED", kNotify,
                          "no event"};
  const About solicited{"events_and_acks.solicited_only_fires_on_solicited",
                        "armed solicited-only, then a receive with IBV_SEND_SOLICITED", kNotify,
                        "one event"};
  const About error{"events_and_acks.solicited_only_fires_on_error",
                    "armed solicited-only, then a flushed receive (status not successful)", kNotify,
                    "one event (an unsuccessful completion is solicited)"};
  const About early{
      "events_and_acks.arm_with_completions_present", "arming a CQ that already holds a completion",
      kNotify + "; ibv_get_cq_event(3)",
      "either: IBA arms for the next completion; a provider may fire (reported as found)"};
  const About nonblocking{"events_and_acks.nonblocking_get_event",
                          "ibv_get_cq_event on an O_NONBLOCK channel with nothing pending",
                          "ibv_get_cq_event(3)", "fails with EAGAIN"};
  const About acked{"events_and_acks.destroy_cq_after_ack",
                    "ibv_destroy_cq after every event was acknowledged", "ibv_get_cq_event(3)",
                    "succeeds"};
  const About all[] = {arm, once, unsolicited, solicited, error, early, nonblocking, acked};

  Evented e = make_evented(device);
  if (e.a == nullptr) {
    for (const About& about : all) sink.add(inconclusive(about, e.why));
    return;
  }
  unsigned events = 0;
  // Armed, then a completion.
  ibv_req_notify_cq(e.cq_b, 0);
  send_one(e, 1, 0);
  void* context = nullptr;
  ibv_cq* got = wait_cq_event(e.channel, kPositiveMs, &context);
  events += got != nullptr;
  const bool right = got == e.cq_b && context == &g_cq_context_tag;
  sink.add(judged(arm, right,
                  got == nullptr ? "no event within 3 s"
                  : right        ? "one event, CQ and cq_context right"
                                 : "an event naming another CQ or context",
                  got == nullptr ? "none"
                  : right        ? "event"
                                 : "wrong"));
  poll_for(e.cq_b, 1, kPositiveMs);
  // Not re-armed: a second completion.
  send_one(e, 2, 0);
  got = wait_cq_event(e.channel, kNegativeMs);
  events += got != nullptr;
  sink.add(judged(once, got == nullptr, yes_no(got, "event"), got != nullptr));
  poll_for(e.cq_b, 1, kPositiveMs);

  // Solicited only: an unsolicited receive, then a solicited one.
  ibv_req_notify_cq(e.cq_b, 1);
  send_one(e, 3, 0);
  got = wait_cq_event(e.channel, kNegativeMs);
  events += got != nullptr;
  sink.add(judged(unsolicited, got == nullptr, yes_no(got, "event"), got != nullptr));
  poll_for(e.cq_b, 1, kPositiveMs);
  if (got != nullptr) ibv_req_notify_cq(e.cq_b, 1);
  send_one(e, 4, IBV_SEND_SOLICITED);
  got = wait_cq_event(e.channel, kPositiveMs);
  events += got != nullptr;
  sink.add(judged(solicited, got == e.cq_b, yes_no(got, "event"), got != nullptr));
  poll_for(e.cq_b, 1, kPositiveMs);

  // Arming while a completion waits in the CQ: the freedom of
  // ibv_get_cq_event(3) ("events without completions" may follow).
  send_one(e, 5, 0);
  {
    // Let the receive completion land before arming.
    const int64_t until = now_ms() + 100;
    while (now_ms() < until) sleep_ms(10);
  }
  ibv_req_notify_cq(e.cq_b, 0);
  got = wait_cq_event(e.channel, kNegativeMs);
  events += got != nullptr;
  sink.add(judged(early, true, got != nullptr ? "fires at once" : "waits for the next completion",
                  got != nullptr ? "fires" : "waits"));
  poll_for(e.cq_b, 1, kPositiveMs);

  // Solicited only, then an unsuccessful completion: a flushed receive.
  ibv_req_notify_cq(e.cq_b, 1);
  post_recv(e.b, *e.buffer, 256, 6);
  to_state(e.b, IBV_QPS_ERR);
  got = wait_cq_event(e.channel, kPositiveMs);
  events += got != nullptr;
  sink.add(judged(error, got == e.cq_b, yes_no(got, "event"), got != nullptr));
  poll_for(e.cq_b, 8, kNegativeMs);

  // Non-blocking channel, nothing pending.
  const int flags = fcntl(e.channel->fd, F_GETFL);
  if (flags < 0 || fcntl(e.channel->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    sink.add(inconclusive(nonblocking, "fcntl O_NONBLOCK failed"));
  } else {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    errno = 0;
    const int ret = ibv_get_cq_event(e.channel, &cq, &ctx);
    const int err = ret == 0 ? 0 : errno;
    if (ret == 0) ++events;
    sink.add(errno_check(nonblocking, EAGAIN, err));
  }

  ibv_ack_cq_events(e.cq_b, events);
  ibv_destroy_qp(e.b);
  sink.add(errno_check(acked, 0, ibv_destroy_cq(e.cq_b)));
}

}  // namespace verbfault::probe

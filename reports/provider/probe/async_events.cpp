// Asynchronous events (ibv_get_async_event(3); IBA 11.6.3 affiliated
// events, IBA 10.3.1 for the state changes behind them): Communication
// Established on a QP in RTR, the SRQ limit (ibv_modify_srq(3)), Last WQE
// Reached on a QP of an SRQ that enters ERR, the access violation event
// of a responder whose memory a WRITE may not touch; the acknowledgement
// that ibv_destroy_qp waits for; EAGAIN on a non-blocking async_fd.
#include "areas.h"
#include "bounded.h"
#include "verbs_kit.h"

#include <fcntl.h>

#include <cstdio>

namespace verbfault::probe {

namespace {

const std::string kSpec = "ibv_get_async_event(3); IBA 11.6.3";

// The first event of `type` whose element is `qp`/`srq`, within the bound.
bool saw(ibv_context* ctx, ibv_event_type type, ibv_qp* qp, ibv_srq* srq, std::string* others,
         bool keep = false) {
  bool found = false;
  collect_async(
      ctx, kPositiveMs,
      [&](const ibv_async_event& e) {
        found = e.event_type == type && (qp == nullptr || e.element.qp == qp) &&
                (srq == nullptr || e.element.srq == srq);
        if (!found) *others += (others->empty() ? "" : " ") + event_name(e.event_type);
        return found;
      },
      keep);
  return found;
}

// a (RTS) -> b on an SRQ; b in RTR or RTS.
struct SrqPair {
  std::unique_ptr<Device> dev;
  ibv_cq* cq = nullptr;
  ibv_srq* srq = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  std::unique_ptr<Buffer> buffer;
};

SrqPair make_srq_pair(const std::string& device, bool b_rts, std::string* why) {
  SrqPair p;
  p.dev = open_device(device, why);
  if (!p.dev) return p;
  Device& dev = *p.dev;
  p.cq = ibv_create_cq(dev.ctx, 64, nullptr, nullptr, 0);
  ibv_srq_init_attr init{};
  init.attr.max_wr = 8;
  init.attr.max_sge = 1;
  p.srq = ibv_create_srq(dev.pd, &init);
  p.buffer = make_buffer(dev, 256);
  if (p.cq == nullptr || p.srq == nullptr || !p.buffer) {
    *why = "could not create a CQ, an SRQ or an MR";
    return p;
  }
  p.a = create_qp(dev, {.send_cq = p.cq, .recv_cq = p.cq});
  p.b = create_qp(dev, {.send_cq = p.cq, .recv_cq = p.cq, .srq = p.srq});
  if (p.a == nullptr || p.b == nullptr ||
      (b_rts ? connect_pair(dev, p.a, p.b) != 0
             : connect(dev, p.a, p.b->qp_num) != 0 || to_init(dev, p.b) != 0 ||
                   to_rtr(dev, p.b, p.a->qp_num) != 0)) {
    *why = !b_rts && dev.iwarp() ? kIwarpNeedsAnsweringPeer
                                 : "could not connect a QP to a QP on an SRQ";
    p.a = nullptr;
  }
  return p;
}

}  // namespace

void probe_async_events(const std::string& device, CheckSink& sink) {
  const About comm_est{"async_events.comm_est", "the first message received by a QP in RTR",
                       "ibv_get_async_event(3); IBA 10.3.1 (RTR)",
                       "IBV_EVENT_COMM_EST for that QP"};
  const About srq_limit{"async_events.srq_limit_reached",
                        "an SRQ armed with srq_limit 3 drops from 4 WRs to 2", "ibv_modify_srq(3)",
                        "IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ"};
  const About last_wqe{"async_events.last_wqe_reached", "a QP on an SRQ moved to ERR", kSpec,
                       "IBV_EVENT_QP_LAST_WQE_REACHED for that QP"};
  const About access_status{"async_events.remote_access_status",
                            "an RDMA WRITE into an MR registered without REMOTE_WRITE",
                            "ibv_poll_cq(3); IBA 9.7 (Remote Access Error NAK)",
                            "the requester's WR completes IBV_WC_REM_ACCESS_ERR"};
  const About access_event{"async_events.qp_access_err", "the responder of that WRITE",
                           kSpec + " (Local Access Violation)",
                           "IBV_EVENT_QP_ACCESS_ERR for the responder's QP"};
  const About nonblocking{"async_events.nonblocking_get_event",
                          "ibv_get_async_event on an O_NONBLOCK async_fd with nothing pending",
                          "ibv_get_async_event(3)", "fails with EAGAIN"};
  const About destroy_unacked{"async_events.destroy_qp_unacked",
                              "ibv_destroy_qp with an affiliated event taken and not "
                              "acknowledged",
                              "ibv_get_async_event(3)",
                              "waits for the acknowledgement (the probe gives up after 5 s)"};

  std::string why;
  {
    // Communication established: b stays in RTR; a SEND reaches it.
    SrqPair p = make_srq_pair(device, false, &why);
    if (p.a == nullptr || post_srq_recv(p.srq, *p.buffer, 256, 1) != 0 ||
        post_send(p.a, IBV_WR_SEND, *p.buffer, 8, 2, IBV_SEND_SIGNALED) != 0) {
      sink.add(inconclusive(comm_est, p.a == nullptr ? why : "could not post"));
    } else {
      std::string others;
      const bool ok = saw(p.dev->ctx, IBV_EVENT_COMM_EST, p.b, nullptr, &others);
      sink.add(judged(comm_est, ok, ok ? "IBV_EVENT_COMM_EST" : "no IBV_EVENT_COMM_EST within 3 s",
                      ok, others.empty() ? "" : "other events: " + others));
    }
  }
  {
    // SRQ limit, then Last WQE Reached.
    SrqPair p = make_srq_pair(device, true, &why);
    bool posted = p.a != nullptr;
    for (int i = 0; posted && i < 4; ++i)
      posted = post_srq_recv(p.srq, *p.buffer, 256, 10 + i) == 0;
    ibv_srq_attr limit{};
    limit.srq_limit = 3;
    if (!posted || ibv_modify_srq(p.srq, &limit, IBV_SRQ_LIMIT) != 0) {
      sink.add(inconclusive(srq_limit, p.a == nullptr ? why : "could not post or arm the SRQ"));
    } else {
      post_send(p.a, IBV_WR_SEND, *p.buffer, 8, 20, IBV_SEND_SIGNALED);
      post_send(p.a, IBV_WR_SEND, *p.buffer, 8, 21, IBV_SEND_SIGNALED);
      poll_for(p.cq, 4, kPositiveMs);
      std::string others;
      const bool ok = saw(p.dev->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, nullptr, p.srq, &others);
      sink.add(
          judged(srq_limit, ok,
                 ok ? "IBV_EVENT_SRQ_LIMIT_REACHED" : "no IBV_EVENT_SRQ_LIMIT_REACHED within 3 s",
                 ok, others.empty() ? "" : "other events: " + others));
    }
    if (p.a == nullptr || to_state(p.b, IBV_QPS_ERR) != 0) {
      sink.add(inconclusive(last_wqe, p.a == nullptr ? why : "could not move the QP to ERR"));
    } else {
      std::string others;
      const bool ok = saw(p.dev->ctx, IBV_EVENT_QP_LAST_WQE_REACHED, p.b, nullptr, &others);
      sink.add(judged(
          last_wqe, ok,
          ok ? "IBV_EVENT_QP_LAST_WQE_REACHED" : "no IBV_EVENT_QP_LAST_WQE_REACHED within 3 s", ok,
          others.empty() ? "" : "other events: " + others));
    }
  }
  {
    // Remote access violation: b's MR has no REMOTE_WRITE.
    SrqPair p = make_srq_pair(device, true, &why);
    auto guarded = p.a ? make_buffer(*p.dev, 64, IBV_ACCESS_LOCAL_WRITE) : nullptr;
    if (!guarded || post_send(p.a, IBV_WR_RDMA_WRITE, *p.buffer, 8, 30, IBV_SEND_SIGNALED,
                              guarded.get()) != 0) {
      sink.add(inconclusive(access_status, p.a == nullptr ? why : "could not post the WRITE"));
      sink.add(inconclusive(access_event, p.a == nullptr ? why : "could not post the WRITE"));
    } else {
      const Polled polled = poll_for(p.cq, 1, kPositiveMs);
      const std::string status =
          polled.wcs.empty() ? "no completion" : wc_status_name(polled.wcs[0].status);
      sink.add(judged(access_status, status == "IBV_WC_REM_ACCESS_ERR", status, status));
      std::string others;
      const bool ok = saw(p.dev->ctx, IBV_EVENT_QP_ACCESS_ERR, p.b, nullptr, &others);
      const int state = qp_state(p.b);
      sink.add(judged(access_event, ok,
                      (ok ? "IBV_EVENT_QP_ACCESS_ERR" : "no IBV_EVENT_QP_ACCESS_ERR within 3 s") +
                          std::string(", responder in ") + qp_state_name(state),
                      {{"event", ok}, {"responder_state", qp_state_name(state)}},
                      others.empty() ? "" : "other events: " + others));
    }
  }
  {
    std::string ignored;
    auto dev = open_device(device, &ignored);
    const int flags = dev ? fcntl(dev->ctx->async_fd, F_GETFL) : -1;
    if (flags < 0 || fcntl(dev->ctx->async_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
      sink.add(inconclusive(nonblocking, "could not make async_fd non-blocking"));
    } else {
      ibv_async_event event{};
      errno = 0;
      const int ret = ibv_get_async_event(dev->ctx, &event);
      if (ret == 0) ibv_ack_async_event(&event);
      sink.add(errno_check(nonblocking, EAGAIN, ret == 0 ? 0 : errno));
    }
  }
  // The destroy that may never return, in a child of its own: an event of
  // the QP (Last WQE Reached, else any affiliated with it) left unacked.
  const Bounded run = run_bounded(
      [&](int fd) {
        std::string reason;
        SrqPair p = make_srq_pair(device, true, &reason);
        if (p.a == nullptr || to_state(p.b, IBV_QPS_ERR) != 0) return;
        bool taken = false;
        collect_async(
            p.dev->ctx, kPositiveMs,
            [&](const ibv_async_event& e) { return taken = e.element.qp == p.b; }, true);
        if (!taken) return;
        dprintf(fd, "ready\n");
        dprintf(fd, "%d\n", ibv_destroy_qp(p.b));
      },
      kPositiveMs + 2000);
  sink.add(destroy_with_unacked_event(destroy_unacked, run,
                                      "the QP raised no async event to leave unacked"));
}

}  // namespace verbfault::probe

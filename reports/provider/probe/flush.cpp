// Flush: a QP moved to ERR completes every outstanding WR of both queues
// with IBV_WC_WR_FLUSH_ERR, in the order they were posted, and every WR
// posted while it is in ERR the same way (IBA 10.3.1, the Error state;
// ibv_poll_cq(3)). A flushed WR is a completion in error, so it completes
// even when it was posted unsignaled (IBA 10.7.3.1: an error completion is
// always generated).
#include "areas.h"
#include "verbs_kit.h"

namespace verbfault::probe {

namespace {

const std::string kSpec = "IBA 10.3.1 (Error state); ibv_poll_cq(3)";

nlohmann::json describe(const Polled& polled) {
  nlohmann::json out = nlohmann::json::array();
  for (const ibv_wc& wc : polled.wcs)
    out.push_back({{"wr_id", wc.wr_id}, {"status", wc_status_name(wc.status)}});
  return out;
}

std::string text(const Polled& polled) {
  if (polled.error != 0) return "ibv_poll_cq failed";
  if (polled.wcs.empty()) return "no completion";
  std::string out;
  for (const ibv_wc& wc : polled.wcs)
    out += (out.empty() ? "" : ", ") + std::to_string(wc.wr_id) + ":" +
           wc_status_name(wc.status).substr(7);
  return out;
}

bool flushed_in_order(const Polled& polled, const std::vector<uint64_t>& wr_ids) {
  if (polled.wcs.size() != wr_ids.size()) return false;
  for (std::size_t i = 0; i < wr_ids.size(); ++i)
    if (polled.wcs[i].wr_id != wr_ids[i] || polled.wcs[i].status != IBV_WC_WR_FLUSH_ERR)
      return false;
  return true;
}

}  // namespace

void probe_flush(const std::string& device, CheckSink& sink) {
  const About recv_outstanding{"flush.outstanding_receives",
                               "3 receive WRs outstanding when the QP is moved to ERR", kSpec,
                               "3 IBV_WC_WR_FLUSH_ERR completions, in post order"};
  const About recv_in_err{"flush.receive_posted_in_err", "a receive WR posted to a QP in ERR",
                          kSpec, "ibv_post_recv succeeds; the WR completes IBV_WC_WR_FLUSH_ERR"};
  const About send_outstanding{
      "flush.outstanding_sends",
      "3 SENDs (signaled, unsignaled, signaled) outstanding to a QP that never answers when the "
      "requester is moved to ERR",
      kSpec + "; IBA 10.7.3.1",
      "3 IBV_WC_WR_FLUSH_ERR completions in post order, the unsignaled one too"};
  const About send_in_err{"flush.send_posted_in_err", "a SEND posted to a QP in ERR", kSpec,
                          "ibv_post_send succeeds; the WR completes IBV_WC_WR_FLUSH_ERR"};
  const About qp_num{"flush.qp_num", "a flush completion names its QP",
                     "ibv_poll_cq(3) (qp_num is valid in every completion)",
                     "wc.qp_num = the QP's number"};

  std::string why;
  auto dev = open_device(device, &why);
  ibv_cq* cq = dev ? ibv_create_cq(dev->ctx, 64, nullptr, nullptr, 0) : nullptr;
  ibv_cq* cq_peer = dev ? ibv_create_cq(dev->ctx, 64, nullptr, nullptr, 0) : nullptr;
  auto buffer = dev ? make_buffer(*dev, 256) : nullptr;
  ibv_qp* a = cq ? create_qp(*dev, {.send_cq = cq, .recv_cq = cq}) : nullptr;
  ibv_qp* b = cq_peer ? create_qp(*dev, {.send_cq = cq_peer, .recv_cq = cq_peer}) : nullptr;
  if (a == nullptr || b == nullptr || !buffer) {
    for (const About& about :
         {recv_outstanding, recv_in_err, send_outstanding, send_in_err, qp_num})
      sink.add(inconclusive(about, dev ? "could not create the QPs" : why));
    return;
  }

  // Receives: a in INIT accepts receive WRs (IBA 10.3.1); connecting it is
  // not needed to flush them.
  if (to_init(*dev, a) != 0 || post_recv(a, *buffer, 256, 1) != 0 ||
      post_recv(a, *buffer, 256, 2) != 0 || post_recv(a, *buffer, 256, 3) != 0 ||
      to_state(a, IBV_QPS_ERR) != 0) {
    sink.add(inconclusive(recv_outstanding, "could not post receives in INIT and move to ERR"));
  } else {
    const Polled polled = poll_for(cq, 3, kPositiveMs);
    sink.add(judged(recv_outstanding, flushed_in_order(polled, {1, 2, 3}), text(polled),
                    describe(polled)));
    if (!polled.wcs.empty()) {
      const bool ok = polled.wcs[0].qp_num == a->qp_num;
      sink.add(judged(qp_num, ok,
                      ok ? "the QP's number" : "qp_num " + std::to_string(polled.wcs[0].qp_num),
                      ok));
    } else {
      sink.add(inconclusive(qp_num, "no flush completion came"));
    }
    const int posted = post_recv(a, *buffer, 256, 4);
    const Polled later = posted == 0 ? poll_for(cq, 1, kPositiveMs) : Polled{};
    const bool ok = posted == 0 && flushed_in_order(later, {4});
    sink.add(judged(recv_in_err, ok,
                    posted != 0
                        ? "ibv_post_recv " + outcome(posted)
                        : "posted; " + text(later) + (later.wcs.empty() ? " within 3 s" : ""),
                    {{"post", errno_name(posted)}, {"completions", describe(later)}}));
  }

  // Sends: b stays in INIT, so a's SENDs are never answered; timeout 20
  // (4 s per attempt) keeps them outstanding while the QP is moved to ERR.
  // Nothing is polled before the move: on a device with a virtual clock
  // (vfsim) an empty poll lets the retries run out.
  ibv_qp* requester = create_qp(*dev, {.send_cq = cq, .recv_cq = cq});
  if (requester == nullptr || to_init(*dev, b) != 0 ||
      connect(*dev, requester, b->qp_num, {.timeout = 20, .retry_cnt = 7}) != 0) {
    const char* why = dev->iwarp() ? kIwarpNeedsAnsweringPeer : "could not connect a requester";
    sink.add(inconclusive(send_outstanding, why));
    sink.add(inconclusive(send_in_err, why));
    return;
  }
  a = requester;
  post_send(a, IBV_WR_SEND, *buffer, 16, 11, IBV_SEND_SIGNALED);
  post_send(a, IBV_WR_SEND, *buffer, 16, 12, 0);
  post_send(a, IBV_WR_SEND, *buffer, 16, 13, IBV_SEND_SIGNALED);
  if (to_state(a, IBV_QPS_ERR) != 0) {
    sink.add(inconclusive(send_outstanding, "could not move the requester to ERR"));
  } else {
    const Polled polled = poll_for(cq, 3, kPositiveMs);
    sink.add(judged(send_outstanding, flushed_in_order(polled, {11, 12, 13}), text(polled),
                    describe(polled)));
  }
  const int posted = post_send(a, IBV_WR_SEND, *buffer, 16, 14, IBV_SEND_SIGNALED);
  const Polled later = posted == 0 ? poll_for(cq, 1, kPositiveMs) : Polled{};
  const bool ok = posted == 0 && flushed_in_order(later, {14});
  sink.add(judged(send_in_err, ok,
                  posted != 0 ? "ibv_post_send " + outcome(posted)
                              : "posted; " + text(later) + (later.wcs.empty() ? " within 3 s" : ""),
                  {{"post", errno_name(posted)}, {"completions", describe(later)}}));
}

}  // namespace verbfault::probe

// RNR and transport retry exhaustion on RC.
//
// RNR: the responder has no receive WR for a SEND; it answers RNR NAK and
// the requester retries after min_rnr_timer, rnr_retry times (IBA
// 9.7.5.2.8; 7 = retry forever), then completes the WR with
// IBV_WC_RNR_RETRY_EXC_ERR and the QP goes to ERR (IBA 10.7.3.1, the
// statuses of ibv_poll_cq(3)).
//
// Retry: the responder never answers (its QP is kept in INIT, where IBA
// 10.3.1 has it drop what arrives); the requester retries every
// 4.096 us * 2^timeout, retry_cnt times (IBA 9.7.6.1.3; 3 bits, no value
// means "forever"), then IBV_WC_RETRY_EXC_ERR, QP to ERR.
#include "areas.h"
#include "verbs_kit.h"

namespace verbfault::probe {

namespace {

struct Rc {
  std::unique_ptr<Device> dev;
  ibv_cq* cq_a = nullptr;
  ibv_cq* cq_b = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  std::unique_ptr<Buffer> buffer;
  std::string why;
};

// a and b on one device; a connected to b with `link`; b connected back
// (or left in INIT when !answer).
Rc make_rc(const std::string& device, const Link& link, bool answer) {
  Rc rc;
  rc.dev = open_device(device, &rc.why);
  if (!rc.dev) return rc;
  Device& dev = *rc.dev;
  rc.cq_a = ibv_create_cq(dev.ctx, 64, nullptr, nullptr, 0);
  rc.cq_b = ibv_create_cq(dev.ctx, 64, nullptr, nullptr, 0);
  if (rc.cq_a == nullptr || rc.cq_b == nullptr) {
    rc.why = "ibv_create_cq failed";
    return rc;
  }
  rc.a = create_qp(dev, {.send_cq = rc.cq_a, .recv_cq = rc.cq_a});
  rc.b = create_qp(dev, {.send_cq = rc.cq_b, .recv_cq = rc.cq_b});
  rc.buffer = make_buffer(dev, 256);
  if (rc.a == nullptr || rc.b == nullptr || !rc.buffer) {
    rc.why = "ibv_create_qp or ibv_reg_mr failed";
    rc.a = nullptr;
    return rc;
  }
  const int up = answer ? connect_pair(dev, rc.b, rc.a, link, link)
                        : (to_init(dev, rc.b) != 0 ? -1 : connect(dev, rc.a, rc.b->qp_num, link));
  if (up != 0) {
    rc.why = !answer && dev.iwarp() ? kIwarpNeedsAnsweringPeer : "could not connect the QPs";
    rc.a = nullptr;
  }
  return rc;
}

std::string first_status(const Polled& polled) {
  if (polled.error != 0) return "ibv_poll_cq failed";
  if (polled.wcs.empty()) return "no completion";
  return wc_status_name(polled.wcs[0].status);
}

void exhaustion(CheckSink& sink, const About& status, const About& state, const Rc& rc,
                ibv_wc_status expected, int timeout_ms) {
  if (rc.a == nullptr) {
    sink.add(inconclusive(status, rc.why));
    sink.add(inconclusive(state, rc.why));
    return;
  }
  if (post_send(rc.a, IBV_WR_SEND, *rc.buffer, 16, 7, IBV_SEND_SIGNALED) != 0) {
    sink.add(inconclusive(status, "ibv_post_send failed"));
    sink.add(inconclusive(state, "ibv_post_send failed"));
    return;
  }
  const int64_t start = now_ms();
  const Polled polled = poll_for(rc.cq_a, 1, timeout_ms);
  const bool ok =
      polled.wcs.size() == 1 && polled.wcs[0].status == expected && polled.wcs[0].wr_id == 7;
  std::string observed = first_status(polled);
  if (polled.wcs.empty()) observed += " within " + std::to_string(timeout_ms / 1000) + " s";
  sink.add(judged(status, ok, observed, first_status(polled),
                  "after " + std::to_string(now_ms() - start) + " ms"));
  const int s = qp_state(rc.a);
  sink.add(judged(state, s == IBV_QPS_ERR, qp_state_name(s), qp_state_name(s)));
  to_state(rc.a, IBV_QPS_ERR);  // stops a requester that still retries
}

}  // namespace

void probe_rnr_and_retry(const std::string& device, CheckSink& sink) {
  const std::string rnr_spec = "ibv_poll_cq(3); IBA 9.7.5.2.8";
  {
    // rnr_retry 1: one retry after the RNR NAK, then the error.
    Rc rc = make_rc(device, {.rnr_retry = 1, .min_rnr_timer = 1}, true);
    exhaustion(sink,
               {"rnr_and_retry.rnr_exhausted", "SEND to a QP with no receive WR, rnr_retry 1",
                rnr_spec, "IBV_WC_RNR_RETRY_EXC_ERR for the SEND"},
               {"rnr_and_retry.rnr_qp_state", "the requester's state after RNR retry exhaustion",
                "IBA 10.7.3.1 (an error completion moves the QP to ERR)", "ERR"},
               rc, IBV_WC_RNR_RETRY_EXC_ERR, kPositiveMs);
    if (rc.b != nullptr) {
      const int s = qp_state(rc.b);
      sink.add(
          judged({"rnr_and_retry.rnr_responder_state", "the responder's state after it RNR-NAKed",
                  "IBA 9.7.5.2.8 (RNR NAK is not an error of the responder)", "RTS"},
                 s == IBV_QPS_RTS, qp_state_name(s), qp_state_name(s)));
    }
  }
  {
    // rnr_retry 7: forever; the receive posted later ends it in success.
    const About forever{"rnr_and_retry.rnr_retry_7_forever",
                        "rnr_retry 7 retries until a receive WR comes", rnr_spec,
                        "no completion while the responder has no receive; SUCCESS once one "
                        "is posted"};
    Rc rc = make_rc(device, {.rnr_retry = 7, .min_rnr_timer = 1}, true);
    if (rc.a == nullptr ||
        post_send(rc.a, IBV_WR_SEND, *rc.buffer, 16, 8, IBV_SEND_SIGNALED) != 0) {
      sink.add(inconclusive(forever, rc.a == nullptr ? rc.why : "ibv_post_send failed"));
    } else {
      const Polled early = poll_for(rc.cq_a, 1, kNegativeMs);
      post_recv(rc.b, *rc.buffer, 256, 9);
      const Polled late = early.wcs.empty() ? poll_for(rc.cq_a, 1, kPositiveMs) : early;
      const bool ok =
          early.wcs.empty() && late.wcs.size() == 1 && late.wcs[0].status == IBV_WC_SUCCESS;
      const std::string observed =
          early.wcs.empty() ? "waits, then " + first_status(late) + " once a receive is posted"
                            : first_status(early) + " before any receive was posted";
      sink.add(judged(forever, ok, observed,
                      {{"before_recv", first_status(early)}, {"after_recv", first_status(late)}}));
    }
  }
  const std::string retry_spec = "ibv_poll_cq(3); IBA 9.7.6.1.3";
  {
    // timeout 10 (4 ms), retry_cnt 2: three attempts, then the error.
    Rc rc = make_rc(device, {.timeout = 10, .retry_cnt = 2}, false);
    exhaustion(sink,
               {"rnr_and_retry.retry_exhausted",
                "SEND to a QP that never answers (kept in INIT), timeout 10, retry_cnt 2",
                retry_spec, "IBV_WC_RETRY_EXC_ERR for the SEND"},
               {"rnr_and_retry.retry_qp_state", "the requester's state after retry exhaustion",
                "IBA 10.7.3.1", "ERR"},
               rc, IBV_WC_RETRY_EXC_ERR, kPositiveMs);
  }
  {
    // retry_cnt 7 is seven retries: unlike rnr_retry, IBA gives the value
    // no special meaning. 8 attempts of 4 ms each take well under the bound.
    Rc rc = make_rc(device, {.timeout = 10, .retry_cnt = 7}, false);
    const About status{"rnr_and_retry.retry_cnt_7_finite",
                       "retry_cnt 7 against a QP that never answers", retry_spec,
                       "IBV_WC_RETRY_EXC_ERR after 7 retries (7 is not \"forever\")"};
    const About state{"rnr_and_retry.retry_cnt_7_qp_state",
                      "the requester's state after retry_cnt 7 ran out", "IBA 10.7.3.1", "ERR"};
    exhaustion(sink, status, state, rc, IBV_WC_RETRY_EXC_ERR, kPositiveMs);
  }
}

}  // namespace verbfault::probe

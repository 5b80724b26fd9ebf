// CQ overflow: more completions than the CQ holds. ibv_create_cq(3) gives
// the CQ "at least cqe entries"; when more arrive the CQ overruns: IBA
// 11.6.3 makes it a CQ Error (IBV_EVENT_CQ_ERR, ibv_get_async_event(3)),
// the QPs whose completions it can no longer take a Local Work Queue
// Catastrophic Error (IBV_EVENT_QP_FATAL, the QP to ERR), and the CQ
// unusable (IBA 11.4.2.1: polling a CQ in error reports the error).
//
// Situation: QP a's send CQ is small; a posts cqe + 8 signaled RDMA WRITEs
// to QP b on the same device without polling.
#include "areas.h"
#include "verbs_kit.h"

namespace verbfault::probe {

namespace {

const std::string kSpecAsync = "ibv_get_async_event(3); IBA 11.6.3";

}  // namespace

void probe_cq_overflow(const std::string& device, CheckSink& sink) {
  const About cq_err{"cq_overflow.cq_err_event", "an overrun CQ raises IBV_EVENT_CQ_ERR",
                     kSpecAsync, "IBV_EVENT_CQ_ERR for the CQ"};
  const About qp_fatal{"cq_overflow.qp_fatal_event",
                       "the QP whose completions overran its CQ gets IBV_EVENT_QP_FATAL",
                       kSpecAsync, "IBV_EVENT_QP_FATAL for the QP"};
  const About qp_err{"cq_overflow.qp_state", "that QP's state after the overrun",
                     "IBA 11.6.3; IBA 10.3.1 (a catastrophic error moves the QP to ERR)", "ERR"};
  const About poll{"cq_overflow.poll_after", "ibv_poll_cq on the overrun CQ",
                   "ibv_poll_cq(3); IBA 11.4.2.1", "a negative return (the CQ is in error)"};
  const About arm{"cq_overflow.req_notify_after", "ibv_req_notify_cq on the overrun CQ",
                  "ibv_req_notify_cq(3); IBA 11.6.3", "fails (the CQ is in error)"};
  const About all[] = {cq_err, qp_fatal, qp_err, poll, arm};

  std::string why;
  auto dev = open_device(device, &why);
  ibv_cq* small = dev ? ibv_create_cq(dev->ctx, 4, nullptr, nullptr, 0) : nullptr;
  ibv_cq* big = dev ? ibv_create_cq(dev->ctx, 256, nullptr, nullptr, 0) : nullptr;
  if (small == nullptr || big == nullptr) {
    for (const About& about : all)
      sink.add(inconclusive(about, dev ? "ibv_create_cq failed" : why));
    return;
  }
  const int count = small->cqe + 8;
  ibv_qp_cap caps{};
  ibv_qp* a =
      create_qp(*dev, {.send_cq = small, .recv_cq = big, .send_wr = uint32_t(count)}, &caps);
  ibv_qp* b = create_qp(*dev, {.send_cq = big, .recv_cq = big});
  auto local = make_buffer(*dev, 64);
  auto remote = make_buffer(*dev, 64);
  if (a == nullptr || b == nullptr || !local || !remote || connect_pair(*dev, a, b) != 0) {
    for (const About& about : all) sink.add(inconclusive(about, "could not connect two RC QPs"));
    return;
  }
  int posted = 0;
  for (; posted < count; ++posted)
    if (post_send(a, IBV_WR_RDMA_WRITE, *local, 8, 1000 + posted, IBV_SEND_SIGNALED,
                  remote.get()) != 0)
      break;
  const std::string situation =
      std::to_string(posted) + " signaled WRITEs into a CQ of cqe " + std::to_string(small->cqe);

  bool saw_cq_err = false, saw_qp_fatal = false;
  std::vector<std::string> seen;
  collect_async(dev->ctx, kPositiveMs, [&](const ibv_async_event& e) {
    seen.push_back(event_name(e.event_type));
    saw_cq_err |= e.event_type == IBV_EVENT_CQ_ERR && e.element.cq == small;
    saw_qp_fatal |= e.event_type == IBV_EVENT_QP_FATAL && e.element.qp == a;
    return saw_cq_err && saw_qp_fatal;
  });
  const std::string events = seen.empty() ? "no async event" : "events:";
  std::string list = events;
  for (const std::string& name : seen) list += " " + name;
  sink.add(judged(cq_err, saw_cq_err,
                  (saw_cq_err ? "IBV_EVENT_CQ_ERR" : "no IBV_EVENT_CQ_ERR") +
                      std::string(" within 3 s after ") + situation,
                  saw_cq_err, list));
  sink.add(judged(qp_fatal, saw_qp_fatal,
                  saw_qp_fatal ? "IBV_EVENT_QP_FATAL" : "no IBV_EVENT_QP_FATAL within 3 s",
                  saw_qp_fatal, list));
  const int state = qp_state(a);
  sink.add(judged(qp_err, state == IBV_QPS_ERR, qp_state_name(state), qp_state_name(state)));

  // Polls until the CQ reports the error or gives nothing more.
  int polled = 0, ret = 0;
  for (int round = 0; round < 1000; ++round) {
    ibv_wc wc[8];
    ret = ibv_poll_cq(small, 8, wc);
    if (ret <= 0) break;
    polled += ret;
  }
  sink.add(judged(poll, ret < 0,
                  ret < 0 ? "returns " + std::to_string(ret) + " after " + std::to_string(polled) +
                                " completions"
                          : "returns " + std::to_string(polled) +
                                " completions, then 0 (the overrun is invisible to polling)",
                  {{"ret", ret < 0 ? -1 : 0}, {"completions", polled}}));
  int armed = ibv_req_notify_cq(small, 0);
  if (armed < 0) armed = -armed;  // some providers return -errno
  sink.add(judged(arm, armed != 0, outcome(armed), errno_name(armed)));
}

}  // namespace verbfault::probe

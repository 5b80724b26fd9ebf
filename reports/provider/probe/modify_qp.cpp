// The ibv_modify_qp transition table (IBA 10.3.1; the table the kernel
// checks in ib_modify_qp_is_ok): every from-state x to-state, each tried
// on a fresh QP driven to the from-state through legal transitions, with
// the minimal correct attribute mask of the transition into the to-state.
// Legal: any state to RESET, any state but RESET to ERR (a QP in RESET
// has nothing to flush; the kernel's table has no RESET->ERR), RESET->INIT, INIT->INIT, INIT->RTR,
// RTR->RTS, RTS->RTS, RTS->SQD, SQD->SQD, SQD->RTS, SQE->RTS; everything
// else fails with EINVAL (ibv_modify_qp(3) returns the errno). RC QPs for
// every row but SQE, which only UC and UD QPs enter (a UD QP whose send
// queue had an error completion). Then the cases of a legal transition
// with a required attribute missing, or one the transition does not
// take: EINVAL, and the QP keeps its state.
#include "areas.h"
#include "verbs_kit.h"

#include <cctype>

namespace verbfault::probe {

namespace {

constexpr ibv_qp_state kStates[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
                                    IBV_QPS_SQD,   IBV_QPS_SQE,  IBV_QPS_ERR};
const std::string kSpec = "ibv_modify_qp(3); IBA 10.3.1";
constexpr uint32_t kQkey = 0x11111111;

bool legal(ibv_qp_state from, ibv_qp_state to) {
  if (to == IBV_QPS_RESET) return true;
  if (to == IBV_QPS_ERR) return from != IBV_QPS_RESET;
  switch (from) {
    case IBV_QPS_RESET:
      return to == IBV_QPS_INIT;
    case IBV_QPS_INIT:
      return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
    case IBV_QPS_RTR:
      return to == IBV_QPS_RTS;
    case IBV_QPS_RTS:
      return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
    case IBV_QPS_SQD:
      return to == IBV_QPS_SQD || to == IBV_QPS_RTS;
    case IBV_QPS_SQE:
      return to == IBV_QPS_RTS;
    default:
      return false;
  }
}

// The minimal correct mask of the RC transition into `to` from `from`
// (for an illegal pair: the mask of the legal transition into `to`).
int rc_mask(ibv_qp_state from, ibv_qp_state to) {
  switch (to) {
    case IBV_QPS_INIT:
      return kInitMask;
    case IBV_QPS_RTR:
      return kRtrMask;
    case IBV_QPS_RTS:
      return from == IBV_QPS_RTS || from == IBV_QPS_SQD ? IBV_QP_STATE : kRtsMask;
    default:
      return IBV_QP_STATE;
  }
}

// The same for a UD QP (the SQE row).
int ud_mask(ibv_qp_state to) {
  return to == IBV_QPS_INIT ? IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY
                            : IBV_QP_STATE;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// A fresh RC QP in `state`, or NULL with the reason.
ibv_qp* rc_in(Device& dev, ibv_cq* cq, ibv_qp_state state, std::string* why) {
  ibv_qp* qp = create_qp(dev, {.send_cq = cq, .recv_cq = cq});
  if (qp == nullptr) {
    *why = "ibv_create_qp failed";
    return nullptr;
  }
  // ERR by way of INIT: RESET -> ERR is not a transition.
  int err = state == IBV_QPS_RESET ? 0 : to_init(dev, qp);
  if (!err && state == IBV_QPS_ERR) err = to_state(qp, IBV_QPS_ERR);
  if (!err && (state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD))
    err = to_rtr(dev, qp, qp->qp_num);
  if (!err && (state == IBV_QPS_RTS || state == IBV_QPS_SQD)) err = to_rts(dev, qp);
  if (!err && state == IBV_QPS_SQD) err = to_state(qp, IBV_QPS_SQD);
  if (err) {
    *why = "could not reach " + qp_state_name(state) + ": " + outcome(err);
    return nullptr;
  }
  return qp;
}

// A fresh UD QP in SQE: RTS, then a SEND whose lkey is wrong, a local
// protection error of its send queue (IBA 10.3.1: UD and UC enter SQE,
// where the receive queue goes on).
ibv_qp* ud_in_sqe(Device& dev, ibv_cq* cq, std::string* why, int* state_after_error) {
  *state_after_error = -1;
  ibv_qp* qp = create_qp(dev, {.type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq});
  auto buffer = make_buffer(dev, 64);
  ibv_ah_attr address = rc_attr(dev, IBV_QPS_RTR, 0, {}).ah_attr;
  ibv_ah* ah = ibv_create_ah(dev.pd, &address);
  if (qp == nullptr || !buffer || ah == nullptr) {
    *why = "could not create a UD QP and an AH";
    return nullptr;
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = dev.port_num;
  a.qkey = kQkey;
  int err = ibv_modify_qp(qp, &a, ud_mask(IBV_QPS_INIT));
  a.qp_state = IBV_QPS_RTR;
  if (!err) err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (!err) err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
  if (err) {
    *why = "could not bring a UD QP to RTS: " + outcome(err);
    return nullptr;
  }
  ibv_sge sge{reinterpret_cast<uintptr_t>(buffer->bytes.data()), 8, buffer->mr->lkey ^ 0x5a5a00};
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qp->qp_num;
  wr.wr.ud.remote_qkey = kQkey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qp, &wr, &bad) != 0) {
    *why = "ibv_post_send with a wrong lkey was refused";
    return nullptr;
  }
  const Polled polled = poll_for(cq, 1, kPositiveMs);
  *state_after_error = qp_state(qp);
  if (polled.wcs.empty() || polled.wcs[0].status == IBV_WC_SUCCESS) {
    *why = "a SEND with a wrong lkey did not complete in error";
    return nullptr;
  }
  if (*state_after_error != IBV_QPS_SQE) {
    *why = "a UD send error left the QP in " + qp_state_name(*state_after_error) + ", not SQE";
    return nullptr;
  }
  return qp;
}

void cell(CheckSink& sink, Device& dev, ibv_cq* cq, ibv_qp_state from, ibv_qp_state to,
          int* sqe_state) {
  const bool ok_to_move = legal(from, to);
  const About about{
      "modify_qp." + lower(qp_state_name(from)) + "_to_" + lower(qp_state_name(to)),
      qp_state_name(from) + " -> " + qp_state_name(to) + (from == IBV_QPS_SQE ? " (UD)" : " (RC)"),
      kSpec, ok_to_move ? "succeeds, the QP is in " + qp_state_name(to) : "fails with EINVAL"};
  std::string why;
  ibv_qp* qp =
      from == IBV_QPS_SQE ? ud_in_sqe(dev, cq, &why, sqe_state) : rc_in(dev, cq, from, &why);
  if (qp == nullptr) {
    sink.add(inconclusive(about, why));
    return;
  }
  ibv_qp_attr a = rc_attr(dev, to, qp->qp_num, {});
  a.qkey = kQkey;
  const int mask = from == IBV_QPS_SQE ? ud_mask(to) : rc_mask(from, to);
  const int err = ibv_modify_qp(qp, &a, mask);
  const int state = qp_state(qp);
  nlohmann::json value = {{"ret", errno_name(err)}, {"state", qp_state_name(state)}};
  std::string observed = outcome(err) + ", QP in " + qp_state_name(state);
  if (err == EOPNOTSUPP || err == ENOSYS) {
    sink.add(Check{about.id, about.title, about.spec, about.expected, observed, value,
                   Verdict::unsupported, ""});
    return;
  }
  const bool ok = ok_to_move ? err == 0 && state == to : err == EINVAL && state == from;
  sink.add(judged(about, ok, observed, value));
}

// A legal transition with `mask`: expected EINVAL, the QP left in `from`.
void wrong_mask(CheckSink& sink, Device& dev, ibv_cq* cq, const std::string& name,
                const std::string& title, ibv_qp_state from, ibv_qp_state to, int mask) {
  const About about{"modify_qp." + name, title, kSpec,
                    "fails with EINVAL, the QP stays in " + qp_state_name(from)};
  std::string why;
  ibv_qp* qp = rc_in(dev, cq, from, &why);
  if (qp == nullptr) {
    sink.add(inconclusive(about, why));
    return;
  }
  ibv_qp_attr a = rc_attr(dev, to, qp->qp_num, {});
  const int err = ibv_modify_qp(qp, &a, mask);
  const int state = qp_state(qp);
  sink.add(judged(about, err == EINVAL && state == from,
                  outcome(err) + ", QP in " + qp_state_name(state),
                  {{"ret", errno_name(err)}, {"state", qp_state_name(state)}}));
}

}  // namespace

void probe_modify_qp(const std::string& device, CheckSink& sink) {
  std::string why;
  auto dev = open_device(device, &why);
  ibv_cq* cq = dev ? ibv_create_cq(dev->ctx, 256, nullptr, nullptr, 0) : nullptr;
  int sqe_state = -1;
  for (ibv_qp_state from : kStates)
    for (ibv_qp_state to : kStates) {
      if (cq == nullptr) {
        sink.add(inconclusive(
            {"modify_qp." + lower(qp_state_name(from)) + "_to_" + lower(qp_state_name(to)),
             qp_state_name(from) + " -> " + qp_state_name(to), kSpec, ""},
            dev ? "ibv_create_cq failed" : why));
        continue;
      }
      cell(sink, *dev, cq, from, to, &sqe_state);
    }
  if (cq == nullptr) return;
  // Every cell above reads the state back with ibv_query_qp: a provider
  // that does not report it makes each cell's "QP in ..." say so.
  const About query{"modify_qp.query_reports_state",
                    "ibv_query_qp's qp_state of an RC QP moved to INIT",
                    "ibv_query_qp(3): qp_state, the current state of the QP", "INIT"};
  if (ibv_qp* qp = create_qp(*dev, {.send_cq = cq, .recv_cq = cq}); qp == nullptr)
    sink.add(inconclusive(query, "ibv_create_qp failed"));
  else if (const int err = to_init(*dev, qp); err != 0)
    sink.add(inconclusive(query, "RESET -> INIT " + outcome(err)));
  else
    sink.add(judged(query, qp_state(qp) == IBV_QPS_INIT, qp_state_name(qp_state(qp)),
                    qp_state_name(qp_state(qp))));
  const About sqe{"modify_qp.ud_send_error_enters_sqe",
                  "a UD QP's state after a send completion error (wrong lkey)",
                  "IBA 10.3.1 (Send Queue Error state, UC and UD)", "SQE"};
  sink.add(
      judged(sqe, sqe_state == IBV_QPS_SQE, qp_state_name(sqe_state), qp_state_name(sqe_state)));

  wrong_mask(sink, *dev, cq, "reset_to_init_without_port", "RESET -> INIT without IBV_QP_PORT",
             IBV_QPS_RESET, IBV_QPS_INIT, kInitMask & ~IBV_QP_PORT);
  wrong_mask(sink, *dev, cq, "reset_to_init_without_access_flags",
             "RESET -> INIT (RC) without IBV_QP_ACCESS_FLAGS", IBV_QPS_RESET, IBV_QPS_INIT,
             kInitMask & ~IBV_QP_ACCESS_FLAGS);
  wrong_mask(sink, *dev, cq, "reset_to_init_with_sq_psn",
             "RESET -> INIT with IBV_QP_SQ_PSN, which the transition does not take", IBV_QPS_RESET,
             IBV_QPS_INIT, kInitMask | IBV_QP_SQ_PSN);
  wrong_mask(sink, *dev, cq, "init_to_rtr_without_dest_qpn", "INIT -> RTR without IBV_QP_DEST_QPN",
             IBV_QPS_INIT, IBV_QPS_RTR, kRtrMask & ~IBV_QP_DEST_QPN);
  wrong_mask(sink, *dev, cq, "init_to_rtr_without_av", "INIT -> RTR without IBV_QP_AV",
             IBV_QPS_INIT, IBV_QPS_RTR, kRtrMask & ~IBV_QP_AV);
  wrong_mask(sink, *dev, cq, "init_to_rtr_without_path_mtu", "INIT -> RTR without IBV_QP_PATH_MTU",
             IBV_QPS_INIT, IBV_QPS_RTR, kRtrMask & ~IBV_QP_PATH_MTU);
  wrong_mask(sink, *dev, cq, "rtr_to_rts_without_sq_psn", "RTR -> RTS without IBV_QP_SQ_PSN",
             IBV_QPS_RTR, IBV_QPS_RTS, kRtsMask & ~IBV_QP_SQ_PSN);
  wrong_mask(sink, *dev, cq, "rtr_to_rts_without_timeout", "RTR -> RTS (RC) without IBV_QP_TIMEOUT",
             IBV_QPS_RTR, IBV_QPS_RTS, kRtsMask & ~IBV_QP_TIMEOUT);
  wrong_mask(sink, *dev, cq, "rtr_to_rts_without_retry_cnt",
             "RTR -> RTS (RC) without IBV_QP_RETRY_CNT", IBV_QPS_RTR, IBV_QPS_RTS,
             kRtsMask & ~IBV_QP_RETRY_CNT);
}

}  // namespace verbfault::probe

// The completer: writes work completions and applies their consequences.
#include "completion_queue.h"
#include "context.h"
#include "fabric.h"
#include "queue_pair.h"
#include "shared_receive_queue.h"
#include "transport.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace verbfault::sim {

namespace {

ibv_wc_opcode send_opcode(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
      return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return IBV_WC_FETCH_ADD;
    case IBV_WR_BIND_MW:
      return IBV_WC_BIND_MW;
    case IBV_WR_LOCAL_INV:
      return IBV_WC_LOCAL_INV;
    default:
      return IBV_WC_SEND;
  }
}

// ibv_poll_cq(3): an error completion has only wr_id, status, qp_num and
// vendor_err; everything else is poison.
ibv_wc error_completion(uint64_t wr_id, uint32_t qpn, ibv_wc_status status, uint32_t vendor_err) {
  ibv_wc wc;
  std::memset(&wc, kPoisonByte, sizeof wc);
  wc.wr_id = wr_id;
  wc.status = status;
  wc.qp_num = qpn;
  wc.vendor_err = vendor_err;
  return wc;
}

void raise(Context& context, ibv_event_type type, void* element) {
  ibv_async_event event{};
  event.event_type = type;
  event.element.cq = static_cast<ibv_cq*>(element);  // the union: any object
  context.raise(event);
}

}  // namespace

namespace completer {

void cq_error(CompletionQueue& cq) {
  cq.enter_error();
  Context& context = cq.context();
  raise(context, IBV_EVENT_CQ_ERR, cq.verbs());
  std::vector<QueuePair*> victims;
  for (auto& [qp, owned] : context.qps)
    if (&qp->send_cq() == &cq || &qp->recv_cq() == &cq) victims.push_back(qp);
  std::sort(victims.begin(), victims.end(),
            [](QueuePair* a, QueuePair* b) { return a->qpn() < b->qpn(); });
  for (QueuePair* qp : victims) {
    if (qp->state() == IBV_QPS_ERR || qp->state() == IBV_QPS_RESET) continue;
    raise(context, IBV_EVENT_QP_FATAL, qp->verbs());
    qp->enter_error();
  }
}

}  // namespace completer

namespace {

void deliver(CompletionQueue& cq, const Completion& completion) {
  if (cq.in_error()) return;  // an errored CQ loses everything (ibv_create_cq(3))
  // ibv_create_cq(3), IBA 11.6.3.1 "CQ overrun".
  if (!cq.push(completion)) completer::cq_error(cq);
}

}  // namespace

namespace completer {

void complete_send(QueuePair& qp, const SendWqe& wqe, ibv_wc_status status, uint32_t vendor_err) {
  // IBA 10.7.3.1: a completion error always generates a work completion,
  // even for an unsignaled WR.
  if (status == IBV_WC_SUCCESS && !wqe.signaled) return;
  Completion c;
  if (status == IBV_WC_SUCCESS) {
    c.wc.wr_id = wqe.wr_id;
    c.wc.status = IBV_WC_SUCCESS;
    c.wc.opcode = send_opcode(wqe.opcode);
    c.wc.byte_len = static_cast<uint32_t>(wqe.length);
    c.wc.qp_num = qp.qpn();
  } else {
    c.wc = error_completion(wqe.wr_id, qp.qpn(), status, vendor_err);
  }
  c.qp = &qp;
  c.send_queue = true;
  c.sq_seq = wqe.seq;
  deliver(qp.send_cq(), c);
  // The first error completion moves the QP to ERR (RC) or SQE (UC, UD)
  // and flushes the rest of its send queue.
  if (status != IBV_WC_SUCCESS && status != IBV_WC_WR_FLUSH_ERR) qp.send_queue_failed();
}

void complete_recv(QueuePair& qp, const ibv_wc& wc, bool from_srq, bool solicited) {
  Completion c;
  c.wc = wc;
  c.qp = &qp;
  c.srq = from_srq ? qp.srq() : nullptr;
  c.solicited = solicited;
  deliver(qp.recv_cq(), c);
}

void fail_recv(QueuePair& qp, const RecvWqe& wqe, bool from_srq, ibv_wc_status status,
               uint32_t vendor_err) {
  Completion c;
  c.wc = error_completion(wqe.wr_id, qp.qpn(), status, vendor_err);
  c.qp = &qp;
  c.srq = from_srq ? qp.srq() : nullptr;
  deliver(qp.recv_cq(), c);
}

void flush(QueuePair& qp) {
  qp.fabric().unschedule(&qp);
  // Work requests complete in the order they were posted, send queue and
  // receive queue each (IBA 10.8.3.3: flushed WRs complete in error).
  Ring<SendWqe> sends = std::move(qp.send_queue());
  qp.send_queue().clear();
  for (const SendWqe& wqe : sends) complete_send(qp, wqe, IBV_WC_WR_FLUSH_ERR, kVendorFlush);
  if (qp.state() == IBV_QPS_SQE) return;  // SQE: the receive queue goes on
  Ring<RecvWqe> receives = std::move(qp.recv_queue());
  qp.recv_queue().clear();
  for (const RecvWqe& wqe : receives) fail_recv(qp, wqe, false, IBV_WC_WR_FLUSH_ERR, kVendorFlush);
  if (qp.srq() != nullptr && !qp.last_wqe_reached) {
    // IBA 11.6.3.1: a QP on an SRQ that enters ERR reports the last WQE it
    // will ever take from the SRQ, so that the application can destroy it.
    qp.last_wqe_reached = true;
    raise(qp.context(), IBV_EVENT_QP_LAST_WQE_REACHED, qp.verbs());
  }
}

}  // namespace completer

}  // namespace verbfault::sim

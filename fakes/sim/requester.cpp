// The requester: executes the send queue of a QP, one WQE at a time, in
// order (IBA 9.5: an RC/UC send queue is processed in order, and a WQE
// completes only after every earlier one has).
#include "completion_queue.h"
#include "context.h"
#include "device.h"
#include "fabric.h"
#include "memory_access.h"
#include "protection_domain.h"
#include "queue_pair.h"
#include "transport.h"

namespace verbfault::sim {

namespace {

bool receives(ibv_qp_state s) {
  return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE;
}

bool port_active(Device& device) {
  return device.port().state == IBV_PORT_ACTIVE;
}

// The QP a message from `qp` reaches, or nullptr when nothing answers on the
// fabric (unknown LID or QPN, port down, QP of another type or not ready).
QueuePair* destination(QueuePair& qp, const SendWqe& wqe) {
  Fabric& fabric = Fabric::get();
  if (!port_active(qp.context().device())) return nullptr;
  const bool ud = qp.type() == IBV_QPT_UD;
  const uint16_t dlid = ud ? wqe.ah.dlid : qp.attr().ah_attr.dlid;
  const uint32_t qpn = ud ? wqe.remote_qpn : qp.attr().dest_qp_num;
  Device* device = fabric.device_with_lid(dlid);
  if (device == nullptr || !port_active(*device)) return nullptr;
  QueuePair* peer = fabric.find_qp(qpn);
  if (peer == nullptr || &peer->context().device() != device) return nullptr;
  if (peer->type() != qp.type() || !receives(peer->state())) return nullptr;
  // A connected QP only accepts the peer it was connected to.
  if (!ud && peer->attr().dest_qp_num != qp.qpn()) return nullptr;
  return peer;
}

enum class Step { kCompleted, kWaiting };

// The request a WQE makes, as the responder sees it (payload set later).
Message message_of(QueuePair& qp, const SendWqe& wqe) {
  Message m;
  const bool ud = qp.type() == IBV_QPT_UD;
  m.qp_type = qp.type();
  m.opcode = wqe.opcode;
  m.send_flags = wqe.send_flags;
  m.imm_data = wqe.imm_data;
  m.remote_addr = wqe.remote_addr;
  m.rkey = wqe.rkey;
  m.compare_add = wqe.compare_add;
  m.swap = wqe.swap;
  if (wqe.opcode == IBV_WR_RDMA_READ) m.read_length = wqe.length;
  // IBA 10.2.4: a Q_Key with the high bit set means "use the sender's own".
  m.qkey = (wqe.remote_qkey & 0x80000000u) ? qp.attr().qkey : wqe.remote_qkey;
  m.ah = ud ? wqe.ah : qp.attr().ah_attr;
  m.src_qpn = qp.qpn();
  Device& device = qp.context().device();
  m.slid = device.lid();
  m.sgid = device.gid(0);
  m.sl = m.ah.sl;
  return m;
}

// One attempt at the WQE at the head of the send queue.
Step attempt(QueuePair& qp, SendWqe& wqe) {
  Fabric& fabric = Fabric::get();
  Message message = message_of(qp, wqe);

  // Local checks first: a bad lkey never leaves the HCA (IBV_WC_LOC_PROT_ERR).
  // The SGEs are resolved here and read or written in place later: the
  // payload by the responder, a READ or atomic response when it is ACKed.
  const bool reads_into_local = wqe.opcode == IBV_WR_RDMA_READ ||
                                wqe.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
                                wqe.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
  Pieces<Target> response_targets;
  Pieces<Source> payload;
  Source inline_payload;
  if (reads_into_local) {
    if (!writable(qp.pd(), wqe.sges, response_targets)) {
      completer::complete_send(qp, wqe, IBV_WC_LOC_PROT_ERR, kVendorLocalProtection);
      return Step::kCompleted;
    }
  } else if (!wqe.inline_data.empty() || wqe.sges.empty()) {
    inline_payload = wqe.inline_data;
    message.payload = std::span(&inline_payload, 1);
  } else if (!readable(qp.pd(), wqe.sges, payload)) {
    completer::complete_send(qp, wqe, IBV_WC_LOC_PROT_ERR, kVendorLocalProtection);
    return Step::kCompleted;
  } else {
    message.payload = payload.view();
  }
  message.length = length_of(message.payload);

  QueuePair* peer = destination(qp, wqe);
  ResponderResult result;
  if (wqe.forced == SendWqe::Forced::kNoAnswer)
    result.response = Response::kNoAnswer;  // the message is lost on every attempt
  else if (wqe.forced == SendWqe::Forced::kRnrNak)
    result.response = Response::kRnrNak;  // the responder has no receive WR, every time
  else if (peer == nullptr)
    result.response = qp.type() == IBV_QPT_RC ? Response::kNoAnswer : Response::kDropped;
  else
    result = responder::receive(*peer, message);

  switch (result.response) {
    case Response::kAck:
      if (reads_into_local) {
        const Source response = wqe.opcode == IBV_WR_RDMA_READ
                                    ? result.read_data
                                    : Source(reinterpret_cast<const uint8_t*>(&result.original),
                                             sizeof result.original);
        copy(response_targets.view(), 0, std::span(&response, 1));
      }
      completer::complete_send(qp, wqe, IBV_WC_SUCCESS, kVendorNone);
      return Step::kCompleted;
    case Response::kDropped:
      // UC and UD are unreliable: the sender never learns of a lost message.
      completer::complete_send(qp, wqe, IBV_WC_SUCCESS, kVendorNone);
      return Step::kCompleted;
    case Response::kRnrNak: {
      // IBA 9.7.5.2.8: rnr_retry 7 retries forever; an injected exhaustion
      // gives up after 7 retries all the same (it is the fault asked for).
      const uint8_t limit = qp.attr().rnr_retry;
      const bool forced = wqe.forced == SendWqe::Forced::kRnrNak;
      if ((limit != 7 || forced) && wqe.rnr_retries_done >= limit) {
        completer::complete_send(qp, wqe, IBV_WC_RNR_RETRY_EXC_ERR, kVendorRnrRetryExceeded);
        return Step::kCompleted;
      }
      ++wqe.rnr_retries_done;
      // The NAK carries the responder's min_rnr_timer (the requester's own
      // when no responder answers an injected NAK).
      const uint8_t timer = (peer != nullptr ? *peer : qp).attr().min_rnr_timer;
      wqe.not_before_ns = fabric.clock().now() + rnr_timer_ns(timer);
      wqe.waiting = true;
      return Step::kWaiting;
    }
    case Response::kNoAnswer: {
      const uint64_t timeout = transport_timeout_ns(qp.attr().timeout);
      if (timeout == 0) {
        // IBA 9.7.6.1.3: timeout 0 disables the timer: the WQE waits forever.
        wqe.not_before_ns = UINT64_MAX;
        wqe.waiting = true;
        return Step::kWaiting;
      }
      if (wqe.transport_retries_done >= qp.attr().retry_cnt) {
        completer::complete_send(qp, wqe, IBV_WC_RETRY_EXC_ERR, kVendorRetryExceeded);
        return Step::kCompleted;
      }
      ++wqe.transport_retries_done;
      wqe.not_before_ns = fabric.clock().now() + timeout;
      wqe.waiting = true;
      return Step::kWaiting;
    }
    case Response::kRemoteAccessError:
      completer::complete_send(qp, wqe, IBV_WC_REM_ACCESS_ERR, kVendorRemoteAccess);
      return Step::kCompleted;
    case Response::kRemoteInvalidRequest:
      completer::complete_send(qp, wqe, IBV_WC_REM_INV_REQ_ERR, kVendorRemoteInvalidRequest);
      return Step::kCompleted;
    case Response::kRemoteOperationError:
      completer::complete_send(qp, wqe, IBV_WC_REM_OP_ERR, kVendorRemoteOperation);
      return Step::kCompleted;
  }
  return Step::kCompleted;
}

}  // namespace

namespace requester {

void progress(QueuePair& qp) {
  Ring<SendWqe>& sq = qp.send_queue();
  Fabric& fabric = Fabric::get();
  const ibv_qp_state state = qp.state();
  if (state == IBV_QPS_ERR || state == IBV_QPS_SQE) {
    // WRs posted in ERR or SQE complete at once with a flush.
    if (!sq.empty()) completer::flush(qp);
    return;
  }
  if (state != IBV_QPS_RTS) return;  // SQD: hold new WRs until back in RTS
  while (!sq.empty() && qp.state() == IBV_QPS_RTS) {
    if (sq.front().waiting) {
      if (sq.front().not_before_ns != UINT64_MAX) fabric.schedule(&qp);
      return;
    }
    // Taken off the queue while it executes: a loopback to this very QP may
    // flush the queue from the responder side.
    SendWqe wqe = std::move(sq.front());
    sq.pop_front();
    if (attempt(qp, wqe) == Step::kWaiting) {
      sq.push_front(std::move(wqe));
      if (sq.front().not_before_ns != UINT64_MAX) fabric.schedule(&qp);
      return;
    }
  }
  if (sq.empty()) fabric.unschedule(&qp);
}

}  // namespace requester

}  // namespace verbfault::sim

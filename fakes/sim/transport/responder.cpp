// The responder: checks an incoming message against the destination QP and
// executes it (IBA 9.7.4 responder side, 9.7.5.2 NAK codes).
#include "context.h"
#include "device.h"
#include "fabric.h"
#include "fault_guard.h"
#include "memory_access.h"
#include "memory_window.h"
#include "network_header.h"
#include "protection_domain.h"
#include "queue_pair.h"
#include "shared_receive_queue.h"
#include "transport.h"

#include <cstring>
#include <optional>

namespace verbfault::sim {

namespace {

constexpr uint64_t kGrhBytes =
    kNetworkHeaderBytes;  // ibv_post_recv(3): UD buffers start with a GRH

void raise_qp_event(QueuePair& qp, ibv_event_type type) {
  ibv_async_event event{};
  event.element.qp = qp.verbs();
  event.event_type = type;
  qp.context().raise(event);
}

// IBA 11.6.3.1: an RC responder that detects an access violation moves its
// QP to ERR and raises the affiliated "local access violation" error.
ResponderResult access_violation(QueuePair& qp) {
  if (qp.type() == IBV_QPT_UC) return {Response::kDropped, {}};
  raise_qp_event(qp, IBV_EVENT_QP_ACCESS_ERR);
  qp.enter_error();
  return {Response::kRemoteAccessError, {}};
}

// IBA 9.7.5.2 / 11.6.3.1: a request the responder QP does not take (an
// operation its access flags do not enable, a misaligned atomic) is NAKed
// Invalid Request, and the responder raises the affiliated "invalid
// request local work queue error" and moves its QP to ERR. UC answers
// nothing: the message is dropped.
ResponderResult invalid_request(QueuePair& qp) {
  if (qp.type() == IBV_QPT_UC) return {Response::kDropped, {}};
  raise_qp_event(qp, IBV_EVENT_QP_REQ_ERR);
  qp.enter_error();
  return {Response::kRemoteInvalidRequest, {}};
}

// Whether the responder QP's access flags (ibv_modify_qp(3)
// qp_access_flags) enable the operation: checked before any R_Key, as the
// kernel's rxe does (rxe_resp.c check_op_valid) and IBA lists it among the
// Invalid Request causes (an operation not supported by the QP).
bool enabled(const QueuePair& qp, unsigned int access) {
  return (qp.attr().qp_access_flags & access) != 0;
}

std::optional<RecvWqe> take_receive(QueuePair& qp, bool& from_srq) {
  from_srq = qp.srq() != nullptr;
  if (from_srq) return qp.srq()->take();
  auto& rq = qp.recv_queue();
  if (rq.empty()) return std::nullopt;
  RecvWqe wqe = std::move(rq.front());
  rq.pop_front();
  return wqe;
}

// A receive WR whose buffer the responder cannot write (a bad lkey, no
// LOCAL_WRITE, or memory the application unmapped or protected after
// registering it): the receive completes with a local protection error and
// the QP goes to ERR; an RC requester gets a remote operation error.
ResponderResult receive_buffer_gone(QueuePair& qp, const RecvWqe& wqe, bool from_srq) {
  completer::fail_recv(qp, wqe, from_srq, IBV_WC_LOC_PROT_ERR, kVendorLocalProtection);
  qp.enter_error();
  return {qp.type() == IBV_QPT_RC ? Response::kRemoteOperationError : Response::kDropped, {}};
}

ibv_wc receive_completion(QueuePair& qp, const Message& m, const RecvWqe& wqe) {
  ibv_wc wc{};
  wc.wr_id = wqe.wr_id;
  wc.status = IBV_WC_SUCCESS;
  wc.qp_num = qp.qpn();
  wc.src_qp = m.src_qpn;
  wc.slid = m.slid;  // 0 from a RoCE sender (message_of)
  wc.sl = m.sl;
  wc.pkey_index = 0;
  if (m.opcode == IBV_WR_SEND_WITH_IMM || m.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    wc.wc_flags |= IBV_WC_WITH_IMM;
    wc.imm_data = m.imm_data;  // network byte order end to end
  }
  if (m.opcode == IBV_WR_SEND_WITH_INV) {
    // ibv_poll_cq(3): the rkey the sender invalidated (host byte order).
    wc.wc_flags |= IBV_WC_WITH_INV;
    wc.invalidated_rkey = m.rkey;
  }
  return wc;
}

ResponderResult on_send(QueuePair& qp, const Message& m) {
  const bool ud = qp.type() == IBV_QPT_UD;
  bool from_srq = false;
  std::optional<RecvWqe> wqe = take_receive(qp, from_srq);
  if (!wqe) {
    // IBA 9.7.5.2.8: RC answers with an RNR NAK; UC and UD drop the message.
    return {qp.type() == IBV_QPT_RC ? Response::kRnrNak : Response::kDropped, {}};
  }
  const uint64_t needed = m.length + (ud ? kGrhBytes : 0);
  if (needed > wqe->capacity) {
    // IBA 9.7.5.2.3: the responder completes its receive with a local
    // length error; an RC requester gets an invalid request NAK.
    completer::fail_recv(qp, *wqe, from_srq, IBV_WC_LOC_LEN_ERR, kVendorLocalLength);
    qp.enter_error();
    return {qp.type() == IBV_QPT_RC ? Response::kRemoteInvalidRequest : Response::kDropped, {}};
  }
  Pieces<Target> targets;
  if (!writable(qp.pd(), wqe->sges, targets)) return receive_buffer_gone(qp, *wqe, from_srq);
  if (m.opcode == IBV_WR_SEND_WITH_INV && !memory_window::invalidate_remote(qp, m.rkey)) {
    // IBA 10.6.7.3: the rkey must name a type 2 window bound through this
    // QP. As rxe (rxe_resp.c, RESPST_ERR_INVALIDATE_RKEY): the receive
    // completes with IBV_WC_REM_INV_REQ_ERR and the QP goes to ERR; the
    // requester gets an invalid request NAK. Nothing is written.
    completer::fail_recv(qp, *wqe, from_srq, IBV_WC_REM_INV_REQ_ERR, kVendorRemoteInvalidRequest);
    qp.enter_error();
    return {qp.type() == IBV_QPT_RC ? Response::kRemoteInvalidRequest : Response::kDropped, {}};
  }
  ibv_wc wc = receive_completion(qp, m, *wqe);
  bool copied = false;
  if (ud && m.ah.is_global) {
    const std::array<uint8_t, kNetworkHeaderBytes> header = network_header(m, m.ah.grh.dgid);
    // The GRH and the payload after it are one copy, so that a payload read
    // from the receive buffer itself is read before the GRH lands on it.
    Pieces<Source> grh_and_payload;
    grh_and_payload.push_back(Source(header.data(), header.size()));
    for (const Source& piece : m.payload) grh_and_payload.push_back(piece);
    copied = copy(targets.view(), 0, grh_and_payload.view());
    wc.wc_flags |= IBV_WC_GRH;
    if (qp.context().device().ethernet()) wc.sl = roce_packet_type(m, m.ah.grh.dgid);
  } else {
    // A UD receive without a GRH keeps the 40 bytes reserved for one as they
    // are; the payload follows them.
    copied = copy(targets.view(), ud ? kGrhBytes : 0, m.payload);
  }
  if (!copied) return receive_buffer_gone(qp, *wqe, from_srq);
  wc.opcode = IBV_WC_RECV;
  wc.byte_len = static_cast<uint32_t>(needed);
  completer::complete_recv(qp, wc, from_srq, m.send_flags & IBV_SEND_SOLICITED);
  return {Response::kAck, {}};
}

ResponderResult on_write(QueuePair& qp, const Message& m) {
  const Message& send = m;
  const bool with_imm = send.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
  // The immediate data consumes a receive WR (IBA 9.4.1.2.4); without one
  // nothing is written.
  if (with_imm && !responder::has_receive(qp))
    return {qp.type() == IBV_QPT_RC ? Response::kRnrNak : Response::kDropped, {}};
  if (!enabled(qp, IBV_ACCESS_REMOTE_WRITE)) return invalid_request(qp);
  const uint64_t length = m.length;
  if (length != 0) {
    // IBA 10.6.3.3: a zero-length RDMA carries no R_Key to check.
    uint8_t* target =
        remote_memory(qp, send.rkey, send.remote_addr, length, IBV_ACCESS_REMOTE_WRITE);
    if (target == nullptr) return access_violation(qp);
    const Target whole(target, length);
    // Registered memory the application unmapped or protected since: an
    // access violation, as for a range outside the region.
    if (!copy(std::span(&whole, 1), 0, m.payload)) return access_violation(qp);
  }
  if (with_imm) {
    bool from_srq = false;
    std::optional<RecvWqe> wqe = take_receive(qp, from_srq);
    ibv_wc wc = receive_completion(qp, m, *wqe);
    wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    wc.byte_len = static_cast<uint32_t>(length);
    completer::complete_recv(qp, wc, from_srq, send.send_flags & IBV_SEND_SOLICITED);
  }
  return {Response::kAck, {}};
}

ResponderResult on_read(QueuePair& qp, const Message& m) {
  const Message& send = m;
  if (!enabled(qp, IBV_ACCESS_REMOTE_READ)) return invalid_request(qp);
  ResponderResult result;
  if (send.read_length == 0) return result;
  const uint8_t* source =
      remote_memory(qp, send.rkey, send.remote_addr, send.read_length, IBV_ACCESS_REMOTE_READ);
  if (source == nullptr) return access_violation(qp);
  result.read_data = Source(source, send.read_length);
  if (!present(std::span(&result.read_data, 1))) return access_violation(qp);
  return result;
}

ResponderResult on_atomic(QueuePair& qp, const Message& m) {
  const Message& send = m;
  if (!enabled(qp, IBV_ACCESS_REMOTE_ATOMIC)) return invalid_request(qp);
  // IBA 9.4.5: the target of an atomic is a naturally aligned 64-bit word.
  if (send.remote_addr % 8 != 0) return invalid_request(qp);
  uint8_t* target = remote_memory(qp, send.rkey, send.remote_addr, 8, IBV_ACCESS_REMOTE_ATOMIC);
  if (target == nullptr) return access_violation(qp);
  struct Atomic {
    uint8_t* target;
    const Message* send;
    uint64_t original;
  } atomic{target, &send, 0};
  const bool done = fault_guard::run(
      [](void* a) {
        Atomic& atomic = *static_cast<Atomic*>(a);
        uint64_t original;
        std::memcpy(&original, atomic.target, 8);
        uint64_t updated = original;
        if (atomic.send->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
          updated = original + atomic.send->compare_add;
        else if (original == atomic.send->compare_add)
          updated = atomic.send->swap;
        std::memcpy(atomic.target, &updated, 8);
        atomic.original = original;
      },
      &atomic);
  if (!done) return access_violation(qp);  // unmapped or protected since registration
  ResponderResult result;
  result.original = atomic.original;
  return result;
}

}  // namespace

namespace responder {

bool has_receive(QueuePair& qp) {
  return qp.srq() != nullptr ? !qp.srq()->empty() : !qp.recv_queue().empty();
}

QueuePair* accepting(Device& device, uint32_t qpn, ibv_qp_type type, uint32_t src_qpn) {
  QueuePair* peer = device.fabric().find_qp(qpn);
  if (peer == nullptr || &peer->context().device() != &device) return nullptr;
  const ibv_qp_state s = peer->state();
  const bool receives =
      s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE;
  if (peer->type() != type || !receives) return nullptr;
  // A connected QP only accepts the peer it was connected to.
  if (type != IBV_QPT_UD && peer->attr().dest_qp_num != src_qpn) return nullptr;
  return peer;
}

ResponderResult receive(QueuePair& qp, const Message& m) {
  // IBA 10.3.1: the first packet received in RTR establishes communication.
  if (qp.state() == IBV_QPS_RTR && qp.type() != IBV_QPT_UD && !qp.communication_established) {
    qp.communication_established = true;
    raise_qp_event(qp, IBV_EVENT_COMM_EST);
  }
  if (qp.type() == IBV_QPT_UD) {
    // IBA 10.2.4: a Q_Key with the high bit set means "use the sender's own".
    if (m.qkey != qp.attr().qkey) return {Response::kDropped, {}};
  }
  switch (m.opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:
      return on_send(qp, m);
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return on_write(qp, m);
    case IBV_WR_RDMA_READ:
      return on_read(qp, m);
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return on_atomic(qp, m);
    default:
      raise_qp_event(qp, IBV_EVENT_QP_REQ_ERR);
      qp.enter_error();
      return {Response::kRemoteInvalidRequest, {}};
  }
}

}  // namespace responder

}  // namespace verbfault::sim

// The transport between simulated QPs: requester, responder, completer.
//
// Like the Soft-RoCE driver, the transport is split into three roles:
// - the requester (requester.cpp) turns the WQE at the head of a send queue
//   into a message, retries it on RNR NAK or timeout, and hands the outcome
//   to the completer;
// - the responder (responder.cpp) checks and executes an incoming message
//   against the destination QP's receive queue and memory and answers with
//   an ACK, a NAK or a read/atomic response;
// - the completer (completer.cpp) writes work completions, moves QPs to ERR
//   on the first error completion and flushes.
// Everything runs under Fabric::mutex, synchronously from the call that made
// progress possible (post, poll, clock advance).
#pragma once

#include "completion.h"
#include "memory_access.h"
#include "work_request.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <span>
#include <type_traits>

namespace verbfault::sim {

class CompletionQueue;
struct Delivery;
class QueuePair;
class Device;

// What the responder answers to a message.
enum class Response {
  kAck,                   // executed (read data / atomic original value attached)
  kRnrNak,                // RC: no receive WR: retry after the RNR timer
  kNoAnswer,              // nobody there: the requester's timer runs out
  kDropped,               // UC/UD: message silently discarded
  kRemoteAccessError,     // NAK: rkey, range or access rights
  kRemoteInvalidRequest,  // NAK: e.g. receive buffer too small, bad opcode
  kRemoteOperationError,  // NAK: responder could not complete (e.g. its CQ)
};

// A request as it reaches a responder: everything the responder needs of
// the requester, copied, so that the same code serves a requester in this
// process and one in another process of the local fabric (a request frame
// carries it as it is: remote_frames.h).
struct Request {
  ibv_qp_type qp_type = IBV_QPT_RC;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  unsigned int send_flags = 0;  // IBV_SEND_SOLICITED matters to the responder
  __be32 imm_data = 0;
  uint64_t remote_addr = 0;
  // RDMA and atomics: the target's key; SEND_WITH_INV: the rkey to
  // invalidate at the target (the IETH, IBA 9.3.1; a frame carries it).
  uint32_t rkey = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  uint64_t read_length = 0;  // RDMA READ: bytes asked for
  // UD: the Q_Key the WR carried, with a high-bit Q_Key already replaced by
  // the sender's own (IBA 10.2.4), and the address vector used.
  uint32_t qkey = 0;
  ibv_ah_attr ah{};
  // The source: the requester's QP number, port LID and GID (the AH's
  // sgid_index, or 0), and the SL its packets carry.
  uint32_t src_qpn = 0;
  uint16_t slid = 0;
  ibv_gid sgid{};
  uint8_t sgid_type = IBV_GID_TYPE_IB;  // enum ibv_gid_type of sgid
  uint8_t sl = 0;
};
static_assert(std::is_trivially_copyable_v<Request>);

// A request and its data.
struct Message : Request {
  // SEND/WRITE data where it lies: the sender's registered memory, checked
  // by the requester, the WQE's inline copy, or a frame from another
  // process. The responder copies it from there into its target, once.
  std::span<const Source> payload;
  uint64_t length = 0;  // bytes of payload
};

struct ResponderResult {
  Response response = Response::kAck;
  // RDMA READ: the responder's memory the requester copies into its SGEs
  // when it takes the ACK (nothing runs between the two to change it).
  Source read_data;
  // Atomics: the target's value before the operation.
  uint64_t original = 0;
};

namespace requester {
// Executes as many WQEs at the head of the send queue as the QP's state
// and the peers allow.
void progress(QueuePair& qp);
// The answer of another process's responder to the request with `psn`
// (remote.cpp); stale answers are ignored.
void answered(QueuePair& qp, uint32_t psn, const ResponderResult& result, uint8_t rnr_timer);
// The same for a delivery of another process's answer (delivery.h).
void apply_answer(QueuePair& qp, const Delivery& delivery);
}  // namespace requester

namespace responder {
ResponderResult receive(QueuePair& destination, const Message& message);
// The QP `qpn` of `device` if it takes a message of a QP of type `type`
// numbered `src_qpn` now: same type, able to receive (RTR and later), and,
// when connected, connected to that QP. nullptr: nothing answers.
QueuePair* accepting(Device& device, uint32_t qpn, ibv_qp_type type, uint32_t src_qpn);
// Whether the QP has a receive WR to take (its own queue, or its SRQ's).
bool has_receive(QueuePair& qp);
}  // namespace responder

namespace completer {
void complete_send(QueuePair& qp, const SendWqe& wqe, ibv_wc_status status, uint32_t vendor_err);
void complete_recv(QueuePair& qp, const ibv_wc& wc, bool from_srq, bool solicited);
// Moves the QP to ERR (IBA 10.3.1: "Error") and completes every outstanding
// WR of both its queues with IBV_WC_WR_FLUSH_ERR, in order.
void flush(QueuePair& qp);
// IBA 11.6.3.1 "CQ error" (overflow or a catastrophic CQ failure): the CQ
// is unusable, IBV_EVENT_CQ_ERR is raised, and every QP that completes
// into it gets IBV_EVENT_QP_FATAL and goes to ERR.
void cq_error(CompletionQueue& cq);
// An error completion for a receive WR (status != success).
void fail_recv(QueuePair& qp, const RecvWqe& wqe, bool from_srq, ibv_wc_status status,
               uint32_t vendor_err);
}  // namespace completer

}  // namespace verbfault::sim

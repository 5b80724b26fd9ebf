// The requester: executes the send queue of a QP, one WQE at a time, in
// order (IBA 9.5: an RC/UC send queue is processed in order, and a WQE
// completes only after every earlier one has).
#include "completion_queue.h"
#include "context.h"
#include "delivery.h"
#include "device.h"
#include "fabric.h"
#include "memory_access.h"
#include "memory_window.h"
#include "multicast.h"
#include "protection_domain.h"
#include "queue_pair.h"
#include "remote.h"
#include "transport.h"

#include <optional>

namespace verbfault::sim {

namespace {

bool port_active(Device& device) {
  return device.port().state == IBV_PORT_ACTIVE;
}

// Where a message from `qp` goes on the fabric: a QP of this process, or a
// device of another member (the owner of the destination LID), or nowhere
// (port down, unknown LID).
struct Destination {
  QueuePair* local = nullptr;
  std::optional<uint32_t> member;  // another process of the local fabric
  bool group = false;              // a multicast group (multicast.h)
};

Destination destination(QueuePair& qp, const SendWqe& wqe) {
  Fabric& fabric = qp.fabric();
  Device& from = qp.context().device();
  if (!port_active(from)) return {};
  const bool ud = qp.type() == IBV_QPT_UD;
  const ibv_ah_attr& ah = ud ? wqe.ah : qp.attr().ah_attr;
  const uint32_t qpn = ud ? wqe.remote_qpn : qp.attr().dest_qp_num;
  if (ud && multicast::addressed(from.ethernet(), ah, qpn)) return {nullptr, std::nullopt, true};
  if (Device* device = fabric.device_at(from, ah)) {
    if (!port_active(*device)) return {};
    return {responder::accepting(*device, qpn, qp.type(), qp.qpn()), std::nullopt};
  }
  return {nullptr, fabric.member_at(from, ah)};
}

enum class Step { kCompleted, kWaiting, kInFlight };

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
  // The source GID: the AH's sgid_index when it has a GRH (ibv_create_ah(3)),
  // GID 0 otherwise; its type says which header a RoCE packet carries
  // (IBTA A17.4.5: RoCE v2 is IP/UDP, v1 the IB GRH).
  const int sgid_index = m.ah.is_global ? m.ah.grh.sgid_index : 0;
  m.sgid = device.gid(sgid_index);
  m.sgid_type = static_cast<uint8_t>(device.gid_type(sgid_index));
  // RoCE has no LIDs (the port's is 0) and carries no SL in its headers
  // (IBTA A17.3): rxe reports 0 for both, as the kernel's
  // ib_init_ah_from_wc expects. Ports of one link layer only reach each
  // other, so what the sender puts here is what the receiver reports.
  m.sl = device.ethernet() ? 0 : m.ah.sl;
  return m;
}

// A UD message to a multicast group: a copy to every QP of this process in
// the group, and one to every other member of the fabric, whose own QPs in
// the group take it there (remote.cpp). A message is no more reliable for
// being multicast: the sender learns nothing of who took it.
void send_to_group(QueuePair& qp, const SendWqe& wqe, const Message& message) {
  const bool ethernet = qp.context().device().ethernet();
  for (QueuePair* receiver : multicast::receivers(qp.fabric(), ethernet, wqe.ah, wqe.ah.dlid))
    responder::receive(*receiver, message);
  Fabric& fabric = qp.fabric();
  wire::Endpoint* endpoint = fabric.endpoint();
  if (endpoint == nullptr) return;
  for (uint32_t member : endpoint->members())
    if (member != fabric.member()) remote::send_request(qp, wqe, message, member);
}

bool reads_into_local(const SendWqe& wqe) {
  return wqe.opcode == IBV_WR_RDMA_READ || wqe.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
         wqe.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// The answer to a request, applied at the requester: a completion, or a
// retry scheduled on the virtual clock. `rnr_timer` is the min_rnr_timer
// an RNR NAK carried; `targets` the WQE's resolved SGEs for READ and atomic
// data (nullptr: resolve them now, for an answer from another process).
Step conclude(QueuePair& qp, SendWqe& wqe, const ResponderResult& result, uint8_t rnr_timer,
              const Pieces<Target>* targets) {
  Fabric& fabric = qp.fabric();
  switch (result.response) {
    case Response::kAck:
      if (reads_into_local(wqe)) {
        Pieces<Target> resolved;
        if (targets == nullptr) {
          // The local MR was deregistered while the request was out.
          if (!writable(qp.pd(), wqe.sges, resolved)) {
            completer::complete_send(qp, wqe, IBV_WC_LOC_PROT_ERR, kVendorLocalProtection);
            return Step::kCompleted;
          }
          targets = &resolved;
        }
        const Source response = wqe.opcode == IBV_WR_RDMA_READ
                                    ? result.read_data
                                    : Source(reinterpret_cast<const uint8_t*>(&result.original),
                                             sizeof result.original);
        // Its buffer unmapped or protected since registration: as a bad lkey.
        if (!copy(targets->view(), 0, std::span(&response, 1))) {
          completer::complete_send(qp, wqe, IBV_WC_LOC_PROT_ERR, kVendorLocalProtection);
          return Step::kCompleted;
        }
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
      wqe.not_before_ns = fabric.clock().now() + rnr_timer_ns(rnr_timer);
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

// One attempt at the WQE at the head of the send queue, or (RC to another
// process) at the first WQE not yet in flight: kInFlight when it was sent
// to another process and waits for its answer.
Step attempt(QueuePair& qp, SendWqe& wqe, bool is_head) {
  if (wqe.opcode == IBV_WR_BIND_MW || wqe.opcode == IBV_WR_LOCAL_INV) {
    // Local operations (IBA 10.6.7): no message, run in their turn.
    if (!is_head) return Step::kWaiting;
    const memory_window::Outcome outcome = wqe.opcode == IBV_WR_BIND_MW
                                               ? memory_window::bind(qp, wqe)
                                               : memory_window::invalidate_local(qp, wqe.rkey);
    completer::complete_send(qp, wqe, outcome.status, outcome.vendor_err);
    return Step::kCompleted;
  }
  Message message = message_of(qp, wqe);

  // Local checks first: a bad lkey never leaves the HCA (IBV_WC_LOC_PROT_ERR).
  // The SGEs are resolved here and read or written in place later: the
  // payload by the responder, a READ or atomic response when it is ACKed.
  Pieces<Target> response_targets;
  Pieces<Source> payload;
  Source inline_payload;
  bool local_error = false;
  if (reads_into_local(wqe)) {
    local_error = !writable(qp.pd(), wqe.sges, response_targets);
  } else if (!wqe.inline_data.empty() || wqe.sges.empty()) {
    inline_payload = wqe.inline_data;
    message.payload = std::span(&inline_payload, 1);
  } else if (!readable(qp.pd(), wqe.sges, payload) || !present(payload.view())) {
    // A bad lkey, or registered memory the application unmapped since.
    local_error = true;
  } else {
    message.payload = payload.view();
  }
  if (local_error) {
    // Behind requests still in flight, it completes in its turn.
    if (!is_head) return Step::kWaiting;
    completer::complete_send(qp, wqe, IBV_WC_LOC_PROT_ERR, kVendorLocalProtection);
    return Step::kCompleted;
  }
  message.length = length_of(message.payload);

  const Destination to = destination(qp, wqe);
  // Behind a request in flight only another request to the same process
  // may go out; anything else waits to be the head.
  if (!is_head && !(to.member && qp.type() == IBV_QPT_RC && wqe.forced == SendWqe::Forced::kNone))
    return Step::kWaiting;
  ResponderResult result;
  if (wqe.forced == SendWqe::Forced::kNoAnswer) {
    result.response = Response::kNoAnswer;  // the message is lost on every attempt
  } else if (wqe.forced == SendWqe::Forced::kRnrNak) {
    result.response = Response::kRnrNak;  // the responder has no receive WR, every time
  } else if (to.group) {
    send_to_group(qp, wqe, message);
    result.response = Response::kDropped;  // unreliable: complete on sending
  } else if (to.member) {
    if (qp.type() == IBV_QPT_RC) {
      if (!wqe.has_psn) {
        wqe.psn = qp.next_psn;
        wqe.has_psn = true;
        qp.next_psn = (qp.next_psn + 1) & 0xffffff;
      }
      if (remote::send_request(qp, wqe, message, *to.member)) return Step::kInFlight;
      result.response = Response::kNoAnswer;  // the member is gone
    } else {
      remote::send_request(qp, wqe, message, *to.member);
      result.response = Response::kDropped;  // unreliable: complete on sending
    }
  } else if (to.local == nullptr) {
    result.response = qp.type() == IBV_QPT_RC ? Response::kNoAnswer : Response::kDropped;
  } else {
    result = responder::receive(*to.local, message);
  }
  if (!is_head) return Step::kWaiting;  // the member is gone: the head times out first
  // The NAK carries the responder's min_rnr_timer (the requester's own
  // when no responder answers an injected NAK).
  const uint8_t timer = (to.local != nullptr ? *to.local : qp).attr().min_rnr_timer;
  return conclude(qp, wqe, result, timer, &response_targets);
}

// At most this many RC requests of one QP are in flight to another process
// at a time (the requests pipeline as on a real link; IBA 9.7.7.1).
constexpr std::size_t kWindow = 128;

// Every WQE in flight is to be sent again, from the head on (go-back-N,
// IBA 9.7.5.2.8: the responder drops what follows a NAK).
void rewind(QueuePair& qp) {
  for (SendWqe& wqe : qp.send_queue()) wqe.in_flight = false;
}

}  // namespace

namespace requester {

void progress(QueuePair& qp) {
  Ring<SendWqe>& sq = qp.send_queue();
  Fabric& fabric = qp.fabric();
  const ibv_qp_state state = qp.state();
  if (state == IBV_QPS_ERR || state == IBV_QPS_SQE) {
    // WRs posted in ERR or SQE complete at once with a flush.
    if (!sq.empty()) completer::flush(qp);
    return;
  }
  if (state != IBV_QPS_RTS) return;  // SQD: hold new WRs until back in RTS
  // Past the WQEs in flight to another process (a prefix of the queue).
  std::size_t next = 0;
  while (next < sq.size() && sq[next].in_flight) ++next;
  // Answers held in the CQ (delivery.h) answered the first WQEs in flight
  // already: they are out of the window, as on an HCA, whose send queue
  // moves on with the ACKs whether or not the application polls.
  while (next < sq.size() && next < kWindow + qp.held_answers && qp.state() == IBV_QPS_RTS) {
    if (sq[next].waiting) {
      if (sq[next].not_before_ns != UINT64_MAX) fabric.schedule(&qp);
      return;
    }
    if (next > 0) {
      // Behind a request in flight: only another request to the same
      // process may follow it before it is answered.
      const Step step = attempt(qp, sq[next], false);
      if (step != Step::kInFlight) return;
      sq[next].in_flight = true;
      ++next;
      continue;
    }
    // Taken off the queue while it executes: a loopback to this very QP may
    // flush the queue from the responder side.
    SendWqe wqe = std::move(sq.front());
    sq.pop_front();
    const Step step = attempt(qp, wqe, true);
    if (step == Step::kCompleted) continue;
    sq.push_front(std::move(wqe));
    if (step == Step::kInFlight) {
      sq.front().in_flight = true;
      next = 1;
      continue;
    }
    if (sq.front().not_before_ns != UINT64_MAX) fabric.schedule(&qp);
    return;
  }
  if (sq.empty()) fabric.unschedule(&qp);
}

void answered(QueuePair& qp, uint32_t psn, const ResponderResult& result, uint8_t rnr_timer) {
  Ring<SendWqe>& sq = qp.send_queue();
  // An answer to anything but the oldest request in flight is stale: to a
  // request sent again after a NAK, or from before a flush or a reset.
  if (sq.empty() || !sq.front().in_flight || sq.front().psn != psn) return;
  SendWqe wqe = std::move(sq.front());
  sq.pop_front();
  wqe.in_flight = false;
  if (conclude(qp, wqe, result, rnr_timer, nullptr) == Step::kWaiting) {
    rewind(qp);
    sq.push_front(std::move(wqe));
    if (sq.front().not_before_ns != UINT64_MAX) qp.fabric().schedule(&qp);
    return;
  }
  progress(qp);
}

void apply_answer(QueuePair& qp, const Delivery& delivery) {
  uint32_t psn = delivery.psn;
  if (delivery.to_front) {
    Ring<SendWqe>& sq = qp.send_queue();
    if (sq.empty() || !sq.front().in_flight) return;
    psn = sq.front().psn;
  }
  ResponderResult result;
  result.response = delivery.response;
  result.original = delivery.original;
  result.read_data = Source(delivery.data.data(), delivery.data.size());
  answered(qp, psn, result, delivery.rnr_timer);
}

}  // namespace requester

}  // namespace verbfault::sim

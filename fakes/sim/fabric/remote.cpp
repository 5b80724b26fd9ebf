// Requests and answers between the simulated devices of two processes
// (remote.h). The requester's side builds a frame from the Message the
// in-process path hands to responder::receive; the responder's side
// rebuilds that Message and calls the same function, under its own
// Fabric::mutex, on its service thread.
#include "remote.h"

#include "cm/cm_wire.h"
#include "cm/connection_manager.h"
#include "completion_queue.h"
#include "context.h"
#include "delivery.h"
#include "device.h"
#include "fabric.h"
#include "multicast.h"
#include "queue_pair.h"
#include "remote_frames.h"
#include "remote_payload.h"
#include "timing_notes.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace verbfault::sim::remote {

namespace {

using Bytes = std::span<const uint8_t>;

template <class T>
Bytes bytes_of(const T& value) {
  return {reinterpret_cast<const uint8_t*>(&value), sizeof value};
}

void answer(Fabric& fabric, uint32_t member, const RequestFrame& request, const ResponderResult& result,
            uint8_t min_rnr_timer, uint8_t flags = 0) {
  ResponseFrame f;
  f.flags = flags;
  f.response = static_cast<uint8_t>(result.response);
  f.min_rnr_timer = min_rnr_timer;
  f.qpn = request.request.src_qpn;
  f.psn = request.psn;
  f.original = result.original;
  f.length = result.response == Response::kAck ? result.read_data.size() : 0;
  const std::array<Bytes, 2> parts = {bytes_of(f), result.read_data.first(f.length)};
  // Sent under the mutex, so the READ data is read before anything of this
  // process can change it; a member that is gone no longer needs it.
  // No wire (a child made by fork(2) left the fabric): nobody to answer.
  if (wire::Endpoint* endpoint = fabric.started_endpoint()) endpoint->send(member, parts);
}

bool needs_receive(ibv_wr_opcode opcode) {
  return opcode == IBV_WR_SEND || opcode == IBV_WR_SEND_WITH_IMM ||
         opcode == IBV_WR_SEND_WITH_INV || opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
}

// A request that consumes a receive WR (a SEND, a WRITE with immediate)
// and found none posted. On hardware the responder answers an RNR NAK (RC)
// or drops it (UC, UD) at once, and whether the application posted its
// receive a moment earlier is a race; here the request waits until the QP
// has a receive WR (retry_held, after ibv_post_recv), or the fabric is
// quiescent and none can come (settle_held): the outcome depends on the
// calls of the two processes, not on when the frame arrived.
struct HeldRequest {
  uint32_t from = 0;
  RequestFrame frame;
  std::vector<uint8_t> payload;
};

// Guarded by Fabric::mutex. Oldest first.
std::deque<HeldRequest>& held_requests() {
  static auto* held = new std::deque<HeldRequest>();  // never destroyed: the service thread
  return *held;
}

// A UD message to a multicast group (multicast.h): taken by every QP of
// this member in the group, each as a request of its own.
bool to_group(const RequestFrame& f) {
  return f.request.qp_type == IBV_QPT_UD &&
         multicast::addressed(f.request.sgid_type != IBV_GID_TYPE_IB, f.request.ah, f.dst_qpn);
}

std::vector<QueuePair*> group_receivers(Fabric& fabric, const RequestFrame& f) {
  return multicast::receivers(fabric, f.request.sgid_type != IBV_GID_TYPE_IB, f.request.ah, f.dlid);
}

QueuePair* destination_of(Fabric& fabric, const RequestFrame& f) {
  // A RoCE requester (its source GID of a RoCE type: a profile gives an
  // Ethernet port no other) addressed the DGID of its GRH, an InfiniBand
  // one the DLID; a port of the other link layer is not on the same network.
  const bool by_gid = f.request.sgid_type != IBV_GID_TYPE_IB;
  Device* device =
      by_gid ? fabric.device_with_gid(f.request.ah.grh.dgid) : fabric.device_with_lid(f.dlid);
  if (device == nullptr || device->port().state != IBV_PORT_ACTIVE) return nullptr;
  return responder::accepting(*device, f.dst_qpn, f.request.qp_type, f.request.src_qpn);
}

// Executes a request against its destination (nullptr: nothing answers)
// and answers it. What it completes into a CQ is held there (delivery.h).
void execute(Fabric& fabric, uint32_t from, const RequestFrame& f, Bytes rest, QueuePair* qp) {
  const bool reliable = f.request.qp_type == IBV_QPT_RC;
  ResponderResult result;
  // The payload where it lies: the frame, or the requester's memory
  // mapped here (remote_payload.h).
  remote_payload::Incoming payload;
  const remote_payload::Incoming::Status status =
      qp != nullptr ? payload.decode(from, f, rest) : remote_payload::Incoming::Status::kOk;
  if (qp == nullptr) {
    // Nothing answers: the requester's transport timer runs out. The
    // frame says so at once, so that it does not wait on the wall clock.
    result.response = Response::kNoAnswer;
  } else if (reliable && f.psn != qp->expected_psn) {
    // IBA 9.7.5.1: a PSN sequence error (requests after one that was NAKed
    // for RNR, or from before a reset) is discarded; the requester sends
    // them again after its head is answered.
    result.response = Response::kNoAnswer;
  } else if (status != remote_payload::Incoming::Status::kOk) {
    // Not taken (not even its PSN): the requester's retry sends the bytes.
    result.response = Response::kNoAnswer;
  } else {
    Message message;
    static_cast<Request&>(message) = f.request;
    message.payload = payload.pieces();
    message.length = f.length;
    fabric.set_holding_deliveries(true);
    result = responder::receive(*qp, message);
    fabric.set_holding_deliveries(false);
    if (reliable && result.response != Response::kRnrNak)
      qp->expected_psn = (qp->expected_psn + 1) & 0xffffff;
  }
  if (reliable)
    answer(fabric, from, f, result, qp != nullptr ? qp->attr().min_rnr_timer : 0,
           status == remote_payload::Incoming::Status::kUnresolved ? kPayloadUnresolved : 0);
}

// Whether the request at `index` of the held list (or a new one, at the
// end) must wait: an earlier one from the same QP still waits (a QP's
// requests are executed in order, IBA 9.5), or it needs a receive WR the
// QP does not have.
bool must_wait(Fabric& fabric, uint32_t from, const RequestFrame& f, QueuePair* qp,
               std::size_t index) {
  const auto& held = held_requests();
  for (std::size_t i = 0; i < index && i < held.size(); ++i)
    if (held[i].from == from && held[i].frame.request.src_qpn == f.request.src_qpn) return true;
  if (to_group(f)) {
    // A message to a group waits until this member has a QP in it (or the
    // fabric is quiescent and none will join) and each such QP has a
    // receive WR: whether a receiver attached a moment before the message
    // came is a race of the wall clock, as for a receive WR.
    if (fabric.not_holding_for() & (uint64_t{1} << from)) return false;
    const std::vector<QueuePair*> receivers = group_receivers(fabric, f);
    return receivers.empty() || std::any_of(receivers.begin(), receivers.end(), [](QueuePair* r) {
             return !responder::has_receive(*r);
           });
  }
  if (qp == nullptr || !needs_receive(f.request.opcode)) return false;
  if (fabric.not_holding_for() & (uint64_t{1} << from)) return false;
  if (f.request.qp_type == IBV_QPT_RC && f.psn != qp->expected_psn) return false;
  return !responder::has_receive(*qp);
}

// Executes a request: against each QP of this member in its group (a
// multicast message), or against its one destination.
void execute_request(Fabric& fabric, uint32_t from, const RequestFrame& f, Bytes rest) {
  if (!to_group(f)) {
    execute(fabric, from, f, rest, destination_of(fabric, f));
    return;
  }
  for (QueuePair* receiver : group_receivers(fabric, f)) execute(fabric, from, f, rest, receiver);
}

void update_settling(Fabric& fabric) {
  if (wire::Endpoint* endpoint = fabric.started_endpoint())
    endpoint->set_settling(!held_requests().empty());
}

void on_request(Fabric& fabric, uint32_t from, const RequestFrame& f, Bytes payload) {
  QueuePair* qp = destination_of(fabric, f);
  auto& held = held_requests();
  if (must_wait(fabric, from, f, qp, held.size())) {
    held.push_back({from, f, std::vector<uint8_t>(payload.begin(), payload.end())});
    update_settling(fabric);
    return;
  }
  execute_request(fabric, from, f, payload);
}

// An answer that completes a WR is held in the QP's send CQ until a poll
// reveals it; one that does not (an RNR NAK, silence, the ACK of an
// unsignaled WR) only moves the requester's own state (a timer on the
// virtual clock, the next request), which nothing of the application
// sees, so it applies at once, unless an answer before it is held.
void deliver_answer(QueuePair& qp, Delivery delivery) {
  Fabric& fabric = qp.fabric();
  if (delivery.completes || qp.held_answers > 0) {
    if (qp.send_cq().hold(std::move(delivery))) ++qp.held_answers;
    // The answer frees its place in the window of requests in flight now,
    // not when a poll reveals it: an HCA sends the rest of its send queue
    // whether or not the application polls (riostream posts 200 RDMA
    // WRITEs, all signaled, and then spins on memory for its peer's
    // answer; with the window held by unrevealed ACKs, the last 72 never
    // left and both sides spun forever).
    fabric.set_holding_deliveries(true);
    requester::progress(qp);
    fabric.set_holding_deliveries(false);
    return;
  }
  // What it completes after all (a retry limit reached, the next WR failing
  // its local checks) is held like any delivery.
  fabric.set_holding_deliveries(true);
  requester::apply_answer(qp, delivery);
  fabric.set_holding_deliveries(false);
}

// Another process's answer to a request of this one.
void on_response(Fabric& fabric, uint32_t from, const ResponseFrame& f, Bytes data) {
  if (f.flags & kPayloadUnresolved) remote_payload::stop_describing_to(from);
  QueuePair* qp = fabric.find_qp(f.qpn);
  if (qp == nullptr) return;  // destroyed meanwhile
  Delivery delivery;
  delivery.kind = Delivery::Kind::kAnswer;
  delivery.qpn = f.qpn;
  delivery.psn = f.psn;
  delivery.response = static_cast<Response>(f.response);
  delivery.rnr_timer = f.min_rnr_timer;
  delivery.original = f.original;
  delivery.data.assign(data.begin(), data.end());
  // What the answer completes when it is applied: an error always does; an
  // ACK does when its WR is signaled (IBA 10.7.3.1); RNR NAK and silence
  // only start a timer.
  switch (delivery.response) {
    case Response::kRnrNak:
    case Response::kNoAnswer:
      delivery.completes = false;
      break;
    case Response::kAck:
    case Response::kDropped: {
      delivery.completes = false;
      for (const SendWqe& wqe : qp->send_queue())
        if (wqe.in_flight && wqe.psn == f.psn) delivery.completes = wqe.signaled;
      break;
    }
    default:
      delivery.completes = true;
  }
  deliver_answer(*qp, std::move(delivery));
}

// Executes the held requests (from `only_from`, or all) that `settle`
// says may go now, in order; true when any went.
template <class MayGo>
bool release_held(Fabric& fabric, std::optional<uint32_t> only_from, MayGo may_go) {
  auto& held = held_requests();
  bool released = false;
  for (std::size_t i = 0; i < held.size();) {
    HeldRequest& h = held[i];
    QueuePair* qp = destination_of(fabric, h.frame);
    if ((only_from && h.from != *only_from) || !may_go(h, qp, i)) {
      ++i;
      continue;
    }
    HeldRequest request = std::move(h);
    held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    execute_request(fabric, request.from, request.frame, request.payload);
    released = true;
  }
  update_settling(fabric);
  return released;
}

// Whether the target's service thread answers this request as soon as it
// handles it, whatever its application does (wire::Endpoint::
// send_expecting_answer): an RC request that consumes no receive WR and
// is not behind one of its QP that may wait for one (must_wait). In
// flight is a prefix of the send queue (requester.cpp).
bool answered_at_once(QueuePair& qp, ibv_wr_opcode opcode) {
  if (qp.type() != IBV_QPT_RC || needs_receive(opcode)) return false;
  for (const SendWqe& wqe : qp.send_queue()) {
    if (!wqe.in_flight) break;
    if (needs_receive(wqe.opcode)) return false;
  }
  return true;
}

}  // namespace

bool send_request(QueuePair& qp, const SendWqe& wqe, const Message& message, uint32_t member) {
  Fabric& fabric = qp.fabric();
  wire::Endpoint* endpoint = fabric.endpoint();
  if (endpoint == nullptr) return false;
  const bool ud = qp.type() == IBV_QPT_UD;
  const bool expects_answer = answered_at_once(qp, message.opcode);
  const auto send = [&](std::span<const Bytes> parts) {
    return expects_answer ? endpoint->send_expecting_answer(member, parts)
                          : endpoint->send(member, parts);
  };
  RequestFrame f;
  f.dlid = ud ? wqe.ah.dlid : qp.attr().ah_attr.dlid;
  f.dst_qpn = ud ? wqe.remote_qpn : qp.attr().dest_qp_num;
  f.psn = wqe.psn;
  f.length = message.length;
  f.request = message;
  // RC: the payload by reference when it lies in shared memory
  // (remote_payload.h): the target copies it from there, once.
  remote_payload::Outgoing described;
  if (described.describe(qp.type(), member, message.payload)) {
    f.payload_format = PayloadFormat::kDescribed;
    if (!send(described.parts(bytes_of(f)))) return false;
    fabric.note_peer(member);
    return true;
  }
  // Otherwise the payload goes straight from the registered memory (or the
  // inline copy) into the wire: no staging copy.
  std::array<Bytes, 1 + Pieces<Source>::kInlinePieces> inline_parts;
  std::vector<Bytes> more;
  std::span<const Bytes> parts;
  if (message.payload.size() < inline_parts.size()) {
    inline_parts[0] = bytes_of(f);
    for (std::size_t i = 0; i < message.payload.size(); ++i)
      inline_parts[i + 1] = message.payload[i];
    parts = std::span(inline_parts.data(), 1 + message.payload.size());
  } else {
    more.push_back(bytes_of(f));
    for (const Source& piece : message.payload) more.push_back(piece);
    parts = more;
  }
  if (!send(parts)) return false;
  fabric.note_peer(member);
  return true;
}

void on_frame(Fabric& fabric, uint32_t from_member, std::span<const uint8_t> frame) {
  auto guard = fabric.enter_from_wire();
  const FrameKind kind = frame.empty() ? FrameKind{} : static_cast<FrameKind>(frame[0]);
  if (kind == FrameKind::kLookAgain) {
    // Nothing to do but look: the frame is no exchange with the member (it
    // makes it no peer that may send work) and no activity a wait of this
    // process waits for. A wait in the device marks itself again. When
    // every application thread still waits outside, the fabric is as
    // quiescent as the asker saw it, and the requests held here for a
    // receive WR are answered now: none of this process's threads can post
    // one, and they go first at quiescence (fabric_wait.h).
    fabric.look_outside();
    if (fabric.marked_outside() && settle_held(fabric)) fabric.count_activity();
    fabric.notify_waiters();
    return;
  }
  fabric.note_peer(from_member);
  fabric.count_activity();
  if (kind == FrameKind::kRequest && frame.size() >= sizeof(RequestFrame)) {
    RequestFrame f;
    std::memcpy(&f, frame.data(), sizeof f);
    if (remote_payload::fits(f, frame.size() - sizeof f))
      on_request(fabric, from_member, f, frame.subspan(sizeof f));
  } else if (kind == FrameKind::kResponse && frame.size() >= sizeof(ResponseFrame)) {
    ResponseFrame f;
    std::memcpy(&f, frame.data(), sizeof f);
    if (frame.size() - sizeof f == f.length) on_response(fabric, from_member, f, frame.subspan(sizeof f));
  } else if (kind == FrameKind::kConnectionManager) {
    cm::Message message;
    if (cm::message_of_frame(from_member, frame.subspan(1), message))
      fabric.connection_manager().receive(message);
  } else if (kind == FrameKind::kGaveUp) {
    // The member waited for this process longer than its grace period
    // while this process's application was outside verbs (fabric_wait.h):
    // what it sent that waits for a receive WR is answered now, as
    // hardware would have by then, and nothing of it is held again until
    // this process's next verbs call.
    fabric.stop_holding_for(from_member);
    if (release_held(fabric, from_member, [](const HeldRequest&, QueuePair*, std::size_t) { return true; }))
      note_timing("member " + std::to_string(from_member) +
                  " gave up waiting: its requests held for a receive WR were answered by the "
                  "wall clock");
  }
  // Whatever the frame did (a delivery, an event, a QP in ERR), threads
  // waiting in the device look again, and this member is not quiescent
  // until they have (wire::Endpoint::set_waiting); threads that all wait
  // outside the device are counted waiting again if what they wait on is
  // still not readable (Fabric::begin_outside).
  fabric.look_outside();
  fabric.notify_waiters();
}

void on_peer_gone(Fabric& fabric, uint32_t member) {
  auto guard = fabric.enter_from_wire();
  fabric.forget_peer(member);
  if (cm::ConnectionManager* manager = fabric.existing_connection_manager())
    manager->member_gone(member);
  remote_payload::forget(member);  // its segments unmapped here
  // Its held requests need no answer any more.
  auto& held = held_requests();
  held.erase(std::remove_if(held.begin(), held.end(),
                            [&](const HeldRequest& h) { return h.from == member; }),
             held.end());
  update_settling(fabric);
  // Every RC QP with requests in flight to that member: nothing will answer
  // them (IBA 9.7.6.1.3: the transport timer runs). Delivered like an
  // answer, after the member's last frame, in QPN order.
  std::vector<QueuePair*> affected;
  for (Context* context : fabric.contexts())
    for (auto& [qp, owned] : context->qps)
      if (qp->type() == IBV_QPT_RC && !qp->send_queue().empty() &&
          qp->send_queue().front().in_flight &&
          fabric.member_at(qp->context().device(), qp->attr().ah_attr) == member)
        affected.push_back(qp);
  std::sort(affected.begin(), affected.end(),
            [](QueuePair* a, QueuePair* b) { return a->qpn() < b->qpn(); });
  for (QueuePair* qp : affected) {
    Delivery lost;
    lost.kind = Delivery::Kind::kAnswer;
    lost.completes = false;
    lost.qpn = qp->qpn();
    lost.to_front = true;  // behind held answers, the front may have moved on
    lost.response = Response::kNoAnswer;
    deliver_answer(*qp, std::move(lost));
  }
  fabric.notify_waiters();
}

bool retry_held(Fabric& fabric) {
  if (held_requests().empty()) return false;
  return release_held(fabric, std::nullopt,
                      [&](const HeldRequest& h, QueuePair* qp, std::size_t index) {
                        return !must_wait(fabric, h.from, h.frame, qp, index);
                      });
}

bool settle_held(Fabric& fabric) {
  if (held_requests().empty()) return false;
  return release_held(fabric, std::nullopt,
                      [](const HeldRequest&, QueuePair*, std::size_t) { return true; });
}

void forget_held_after_fork() {
  held_requests().clear();
}

bool holds_requests() {
  return !held_requests().empty();
}

namespace {

// A frame of its kind alone (kGaveUp, kLookAgain).
void send_kind(Fabric& fabric, uint32_t member, FrameKind kind) {
  wire::Endpoint* endpoint = fabric.started_endpoint();
  if (endpoint == nullptr) return;
  const std::array<Bytes, 1> parts = {bytes_of(kind)};
  endpoint->send(member, parts);
}

}  // namespace

void ask_to_look(Fabric& fabric, uint32_t member) {
  send_kind(fabric, member, FrameKind::kLookAgain);
}

void give_up_on(Fabric& fabric, uint32_t member) {
  send_kind(fabric, member, FrameKind::kGaveUp);
}

}  // namespace verbfault::sim::remote

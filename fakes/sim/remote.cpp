// Requests and answers between the simulated devices of two processes
// (remote.h). The requester's side builds a frame from the Message the
// in-process path hands to responder::receive; the responder's side
// rebuilds that Message and calls the same function, under its own
// Fabric::mutex, on its service thread.
#include "remote.h"

#include "context.h"
#include "device.h"
#include "fabric.h"
#include "queue_pair.h"
#include "remote_frames.h"
#include "remote_payload.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace verbfault::sim::remote {

namespace {

using Bytes = std::span<const uint8_t>;

template <class T>
Bytes bytes_of(const T& value) {
  return {reinterpret_cast<const uint8_t*>(&value), sizeof value};
}

void answer(uint32_t member, const RequestFrame& request, const ResponderResult& result,
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
  Fabric::get().endpoint()->send(member, parts);
}

void on_request(uint32_t from, const RequestFrame& f, Bytes rest) {
  Fabric& fabric = Fabric::get();
  const ibv_qp_type type = f.request.qp_type;
  Device* device = fabric.device_with_lid(f.dlid);
  QueuePair* qp = nullptr;
  if (device != nullptr && device->port().state == IBV_PORT_ACTIVE)
    qp = responder::accepting(*device, f.dst_qpn, type, f.request.src_qpn);
  const bool reliable = type == IBV_QPT_RC;
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
    result = responder::receive(*qp, message);
    if (reliable && result.response != Response::kRnrNak)
      qp->expected_psn = (qp->expected_psn + 1) & 0xffffff;
  }
  if (reliable)
    answer(from, f, result, qp != nullptr ? qp->attr().min_rnr_timer : 0,
           status == remote_payload::Incoming::Status::kUnresolved ? kPayloadUnresolved : 0);
}

void on_response(uint32_t from, const ResponseFrame& f, Bytes data) {
  if (f.flags & kPayloadUnresolved) remote_payload::stop_describing_to(from);
  QueuePair* qp = Fabric::get().find_qp(f.qpn);
  if (qp == nullptr) return;  // destroyed meanwhile
  ResponderResult result;
  result.response = static_cast<Response>(f.response);
  result.original = f.original;
  result.read_data = Source(data.data(), data.size());
  requester::answered(*qp, f.psn, result, f.min_rnr_timer);
}

}  // namespace

bool send_request(QueuePair& qp, const SendWqe& wqe, const Message& message, uint32_t member) {
  wire::Endpoint* endpoint = Fabric::get().endpoint();
  if (endpoint == nullptr) return false;
  const bool ud = qp.type() == IBV_QPT_UD;
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
    if (!endpoint->send(member, described.parts(bytes_of(f)))) return false;
    Fabric::get().note_peer(member);
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
  if (!endpoint->send(member, parts)) return false;
  Fabric::get().note_peer(member);
  return true;
}

void on_frame(uint32_t from_member, std::span<const uint8_t> frame) {
  auto guard = Fabric::enter();
  Fabric::get().note_peer(from_member);
  if (!frame.empty() && frame[0] == static_cast<uint8_t>(FrameKind::kRequest) &&
      frame.size() >= sizeof(RequestFrame)) {
    RequestFrame f;
    std::memcpy(&f, frame.data(), sizeof f);
    if (remote_payload::fits(f, frame.size() - sizeof f))
      on_request(from_member, f, frame.subspan(sizeof f));
  } else if (!frame.empty() && frame[0] == static_cast<uint8_t>(FrameKind::kResponse) &&
             frame.size() >= sizeof(ResponseFrame)) {
    ResponseFrame f;
    std::memcpy(&f, frame.data(), sizeof f);
    if (frame.size() - sizeof f == f.length) on_response(from_member, f, frame.subspan(sizeof f));
  }
  // Whatever the frame did (a completion, an event, a QP in ERR), threads
  // waiting in the device look again.
  Fabric::get().wakeup.notify_all();
}

void on_peer_gone(uint32_t member) {
  auto guard = Fabric::enter();
  Fabric& fabric = Fabric::get();
  fabric.forget_peer(member);
  remote_payload::forget(member);  // its segments unmapped here
  // Every RC QP with requests in flight to that member: QPN order, so that
  // what happens next does not depend on where the QPs are in memory.
  std::vector<QueuePair*> affected;
  for (Context* context : fabric.contexts())
    for (auto& [qp, owned] : context->qps)
      if (qp->type() == IBV_QPT_RC && !qp->send_queue().empty() &&
          qp->send_queue().front().in_flight &&
          fabric.member_with_lid(qp->attr().ah_attr.dlid) == member)
        affected.push_back(qp);
  std::sort(affected.begin(), affected.end(),
            [](QueuePair* a, QueuePair* b) { return a->qpn() < b->qpn(); });
  for (QueuePair* qp : affected) requester::peer_gone(*qp);
  fabric.wakeup.notify_all();
}

}  // namespace verbfault::sim::remote

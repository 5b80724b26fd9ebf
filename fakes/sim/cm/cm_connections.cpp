// Connecting, accepting, rejecting and disconnecting ids (cma.c,
// ucma.c), and the IB CM exchange between the two sides' managers
// (cm.c; IBA 12.6 and 12.11): a REQ, the REP, the RTU; REJ; DREQ and DREP;
// SIDR REQ and REP for UD ids. Each side's manager keeps its ids' IB CM
// state and turns the messages it receives into the events its
// application reads, with the kernel's statuses and private-data lengths.
#include "cm_addresses.h"
#include "connection_manager.h"
#include "device.h"
#include "fabric.h"
#include "user_memory.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace verbfault::sim::cm {

namespace {

bool is_ud(const CmId& id) {
  return id.qp_type == IBV_QPT_UD;
}

void copy_private_data(Message& message, const uint8_t* data, uint8_t length) {
  message.private_data_len = length;
  std::memcpy(message.private_data, data, length);
}

// The event's connection parameters as the receiver's kernel reports
// them: the private data is the message's whole field past the rdma_cm
// header, `length` bytes whatever the sender wrote (zero-padded).
rdma_ucm_conn_param conn_param_of(const Message& message, uint8_t length) {
  rdma_ucm_conn_param conn{};
  conn.qp_num = message.qp_num;
  conn.flow_control = message.flow_control;
  conn.rnr_retry_count = message.rnr_retry_count;
  conn.srq = message.srq;
  std::memcpy(conn.private_data, message.private_data, length);
  conn.private_data_len = length;
  return conn;
}

}  // namespace

Message ConnectionManager::reply_to(const CmId& id, MessageKind kind) const {
  Message message;
  message.kind = kind;
  message.local_id = id.handle;
  message.remote_id = id.peer_id;
  message.sender = own_node(*id.source.device);
  message.target = id.peer;
  return message;
}

int ConnectionManager::connect(int fd, const rdma_ucm_connect& command) {
  int error = 0;
  CmId* id = find_with_device(fd, command.id, error);
  if (id == nullptr) return error;
  const rdma_ucm_conn_param& conn = command.conn_param;
  if (!conn.valid) return EINVAL;  // ucma_connect
  if (id->state != IdState::kRouteResolved || !id->path) return EINVAL;
  // The user's private data follows the 36-byte rdma_cm header in the REQ
  // (92 bytes) or SIDR REQ (216): 56 and 180 bytes (cma_connect_ib,
  // cma_resolve_ib_udp).
  const uint8_t room =
      static_cast<uint8_t>((is_ud(*id) ? kSidrReqPrivateData : kReqPrivateData) - kIpHeaderBytes);
  if (conn.private_data_len > room) return EINVAL;
  retarget_to_listener(*id);
  Message request;
  request.kind = is_ud(*id) ? MessageKind::kSidrReq : MessageKind::kReq;
  request.local_id = id->handle;
  request.remote_id = kUnknownId;
  request.sender = own_node(*id->source.device);
  request.target.member = id->path->target.member;
  request.target.device = id->path->target.device;
  request.target.lid = id->path->dlid;
  request.target.gid = id->path->dgid;
  request.port_space = id->port_space;
  request.service_port = port_of(id->destination);
  request.source = id->source.address;
  request.destination = id->destination;
  request.qp_type = id->qp_type;
  request.path_mtu = id->path->mtu;
  copy_private_data(request, conn.private_data, conn.private_data_len);
  if (!is_ud(*id)) {
    id->qp_num = conn.qp_num & 0xffffff;
    id->responder_resources = conn.responder_resources;
    id->initiator_depth = conn.initiator_depth;
    id->retry_count = std::min<uint8_t>(7, conn.retry_count);
    id->rnr_retry_count = std::min<uint8_t>(7, conn.rnr_retry_count);
    request.qp_num = id->qp_num;
    request.starting_psn = id->seq_num;
    request.responder_resources = conn.responder_resources;
    request.initiator_depth = conn.initiator_depth;
    request.flow_control = conn.flow_control;
    request.retry_count = id->retry_count;
    request.rnr_retry_count = id->rnr_retry_count;
    request.srq = conn.srq;
  }
  id->peer = request.target;
  id->peer_id = kUnknownId;
  id->cm_id = true;
  id->connection = is_ud(*id) ? ConnectionState::kSidrReqSent : ConnectionState::kReqSent;
  id->state = IdState::kConnect;
  if (is_multicast(id->destination)) {
    // A REQ (or SIDR REQ) to a group address: the route exists (the SA
    // answers a path to an MGID with its MLID; RoCE maps the group's MAC)
    // but no CM agent answers a request sent to a group: every retry is
    // lost, UNREACHABLE -ETIMEDOUT. Never a connection to this process.
    local_.push_back(connect_fault_answer(request, Fault::kUnreachable));
    return 0;
  }
  if (fault_ == Fault::kUnreachable || fault_ == Fault::kReject) {
    // The harness's cm_unreachable / cm_reject: the passive side never
    // hears of the request; its answer (none, or a reject) is made here as
    // the wire would bring it (connect_fault_answer).
    local_.push_back(connect_fault_answer(request, fault_));
    return 0;
  }
  send(request);
  return 0;
}

Message ConnectionManager::connect_fault_answer(const Message& request, Fault fault) {
  Message answer = request;
  answer.remote_id = request.local_id;
  answer.local_id = kUnknownId;
  std::swap(answer.sender, answer.target);
  std::memset(answer.private_data, 0, sizeof answer.private_data);
  if (fault == Fault::kUnreachable) {
    answer.kind = MessageKind::kUnreachable;  // every retry of the REQ lost
    return answer;
  }
  const bool ud = request.kind == MessageKind::kSidrReq;
  answer.kind = ud ? MessageKind::kSidrRep : MessageKind::kRej;
  answer.reason = ud ? kSidrReject : kRejectConsumer;
  answer.qp_num = 0;
  std::memcpy(answer.private_data, kRejectPrivateData.data(), kRejectPrivateData.size());
  answer.private_data_len = static_cast<uint8_t>(kRejectPrivateData.size());
  return answer;
}

int ConnectionManager::accept(int fd, const rdma_ucm_accept& command) {
  int error = 0;
  CmId* id = find_with_device(fd, command.id, error);
  if (id == nullptr) return error;
  if (id->state != IdState::kConnect) return EINVAL;
  const rdma_ucm_conn_param& conn = command.conn_param;
  if (is_ud(*id)) {
    // cma_send_sidr_rep: the request's answer, with the QP and qkey.
    if (id->connection != ConnectionState::kReqReceived) return EINVAL;
    if (conn.valid && conn.private_data_len > kSidrRepPrivateData) return EINVAL;
    Message reply = reply_to(*id, MessageKind::kSidrRep);
    reply.reason = 0;  // IB_SIDR_SUCCESS
    if (conn.valid) {
      reply.qp_num = conn.qp_num & 0xffffff;
      copy_private_data(reply, conn.private_data, conn.private_data_len);
      id->uid = command.uid;
    }
    reply.qkey = kDefaultQkey;
    id->connection = ConnectionState::kNone;
    send(reply);
    return 0;
  }
  if (!conn.valid) {
    // The active side after CONNECT_RESPONSE (cma_rep_recv): the RTU.
    if (id->connection != ConnectionState::kRepReceived) return EINVAL;
    id->connection = ConnectionState::kEstablished;
    send(reply_to(*id, MessageKind::kRtu));
    return 0;
  }
  if (id->connection != ConnectionState::kReqReceived) return EINVAL;
  if (conn.private_data_len > kRepPrivateData) {
    // A failure inside rdma_accept rejects the request (REJ 28).
    Message reject = reply_to(*id, MessageKind::kRej);
    reject.reason = kRejectConsumer;
    id->connection = ConnectionState::kNone;
    send(reject);
    return EINVAL;
  }
  id->qp_num = conn.qp_num & 0xffffff;
  id->responder_resources = conn.responder_resources;
  id->initiator_depth = conn.initiator_depth;
  Message reply = reply_to(*id, MessageKind::kRep);
  reply.qp_num = id->qp_num;
  reply.starting_psn = id->seq_num;
  reply.responder_resources = conn.responder_resources;
  reply.initiator_depth = conn.initiator_depth;
  reply.flow_control = conn.flow_control;
  reply.rnr_retry_count = std::min<uint8_t>(7, conn.rnr_retry_count);
  reply.srq = conn.srq;
  reply.path_mtu = id->path ? id->path->mtu : 0;
  copy_private_data(reply, conn.private_data, conn.private_data_len);
  id->connection = ConnectionState::kRepSent;
  id->uid = command.uid;  // its events are the application's from now on
  send(reply);
  return 0;
}

int ConnectionManager::reject(int fd, const rdma_ucm_reject& command) {
  int error = 0;
  CmId* id = find_with_device(fd, command.id, error);
  if (id == nullptr) return error;
  // ucma_reject: 0 is the consumer's reason; only it and the ECE one.
  const uint8_t reason = command.reason == 0 ? kRejectConsumer : command.reason;
  if (reason != kRejectConsumer && reason != kRejectVendorOptionNotSupported) return EINVAL;
  if (!id->cm_id) return EINVAL;
  if (is_ud(*id)) {
    if (id->connection != ConnectionState::kReqReceived) return EINVAL;
    if (command.private_data_len > kSidrRepPrivateData) return EINVAL;
    Message reply = reply_to(*id, MessageKind::kSidrRep);
    reply.reason = kSidrReject;
    copy_private_data(reply, command.private_data, command.private_data_len);
    id->connection = ConnectionState::kNone;
    send(reply);
    return 0;
  }
  if (command.private_data_len > kRejPrivateData) return EINVAL;
  // ib_send_cm_rej: before the connection is established.
  switch (id->connection) {
    case ConnectionState::kReqSent:
    case ConnectionState::kReqReceived:
    case ConnectionState::kRepReceived:
      id->connection = ConnectionState::kNone;
      break;
    case ConnectionState::kRepSent:
      enter_timewait(*id);
      break;
    default:
      return EINVAL;
  }
  Message reply = reply_to(*id, MessageKind::kRej);
  reply.reason = reason;
  copy_private_data(reply, command.private_data, command.private_data_len);
  send(reply);
  return 0;
}

int ConnectionManager::disconnect(int fd, const rdma_ucm_disconnect& command) {
  int error = 0;
  CmId* id = find_with_device(fd, command.id, error);
  if (id == nullptr) return error;
  if (!id->cm_id) return EINVAL;  // never connected
  // rdma_disconnect: a DREQ when established, the DREP when the peer's
  // DREQ came first; in any other state nothing, and no event follows.
  if (id->connection == ConnectionState::kEstablished) {
    id->connection = ConnectionState::kDreqSent;
    send(reply_to(*id, MessageKind::kDreq));
  } else if (id->connection == ConnectionState::kDreqReceived) {
    enter_timewait(*id);
    send(reply_to(*id, MessageKind::kDrep));
  }
  return 0;
}

int ConnectionManager::notify(int fd, const rdma_ucm_notify& command) {
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  if (!id->source.device || !id->cm_id) return EINVAL;
  // ib_cm_notify: a receive completion before the RTU establishes the
  // connection (IBV_EVENT_COMM_EST, IBA 11.6.3.1).
  if (command.event != IBV_EVENT_COMM_EST) return EINVAL;
  if (id->connection == ConnectionState::kEstablished) return EISCONN;
  if (id->connection != ConnectionState::kRepSent) return EINVAL;
  id->connection = ConnectionState::kEstablished;
  report(*id, CmEvent::kEstablished, 0);
  return 0;
}

int ConnectionManager::migrate_id(int fd, const rdma_ucm_migrate_id& command) {
  // The command goes to the new file; `fd` names the old one.
  const int old_fd = static_cast<int>(command.fd);
  const auto old_file = files_.find(old_fd);
  if (old_file == files_.end()) return fcntl(old_fd, F_GETFD) < 0 ? ENOENT : EINVAL;
  int error = 0;
  CmId* id = find(old_fd, command.id, error);
  if (id == nullptr) return error;
  rdma_ucm_migrate_resp response{};
  response.events_reported = id->events_reported;
  if (old_fd != fd) {
    // Its queued events move to the tail of the new file's list, in order.
    CmFile& from = *old_file->second;
    CmFile& to = *files_.at(fd);
    for (auto it = from.events.begin(); it != from.events.end();) {
      if (it->charged == id->handle) {
        to.events.push_back(*it);
        it = from.events.erase(it);
      } else {
        ++it;
      }
    }
    // And those held up on the way arrive at the new file.
    for (auto& [due, held] : delayed_)
      if (held.event.charged == id->handle) held.file = fd;
    from.update_readiness();
    to.update_readiness();
    id->file = fd;
  }
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  return 0;
}

void ConnectionManager::leave_connection(CmId& id) {
  if (!id.cm_id || !id.source.device) return;
  // cm_destroy_id: what the peer hears of an id destroyed in each state.
  switch (id.connection) {
    case ConnectionState::kReqSent: {
      Message reject = reply_to(id, MessageKind::kRej);
      reject.reason = kRejectTimeout;
      send(reject);
      break;
    }
    case ConnectionState::kReqReceived:
      if (!is_ud(id)) {
        Message reject = reply_to(id, MessageKind::kRej);
        reject.reason = kRejectConsumer;
        send(reject);
      } else {
        Message reply = reply_to(id, MessageKind::kSidrRep);
        reply.reason = kSidrReject;
        send(reply);
      }
      break;
    case ConnectionState::kRepReceived:
    case ConnectionState::kRepSent: {
      Message reject = reply_to(id, MessageKind::kRej);
      reject.reason = kRejectConsumer;
      send(reject);
      break;
    }
    case ConnectionState::kEstablished:
      send(reply_to(id, MessageKind::kDreq));
      break;
    case ConnectionState::kDreqReceived:
      send(reply_to(id, MessageKind::kDrep));
      break;
    default:
      break;
  }
  id.connection = ConnectionState::kNone;
}

void ConnectionManager::enter_timewait(CmId& id) {
  id.connection = ConnectionState::kTimewait;
  // cm_enter_timewait: the address vector's timeout, as cm_convert_to_ms
  // makes milliseconds of it (2^(t-8) ms): about 128 ms on InfiniBand and
  // 2 s on RoCE with this fabric's packet lifetimes.
  const uint8_t timeout = id.path ? id.path->ack_timeout() : 14;
  const uint64_t ms = uint64_t{1} << std::max(0, timeout - 8);
  timewait_[id.handle] = fabric_.clock().now() + ms * 1000 * 1000;
}

std::optional<uint64_t> ConnectionManager::next_deadline() const {
  std::optional<uint64_t> next;
  for (const auto& [handle, at] : timewait_)
    if (!next || at < *next) next = at;
  if (!delayed_.empty() && (!next || delayed_.begin()->first < *next))
    next = delayed_.begin()->first;
  return next;
}

void ConnectionManager::expire(uint64_t now) {
  // In id order: the order of the events must not depend on anything but
  // the program.
  std::vector<uint32_t> due;
  for (const auto& [handle, at] : timewait_)
    if (at <= now) due.push_back(handle);
  for (uint32_t handle : due) {
    timewait_.erase(handle);
    auto found = ids_.find(handle);
    if (found == ids_.end()) continue;
    CmId& id = found->second;
    if (id.connection == ConnectionState::kTimewait) id.connection = ConnectionState::kNone;
    // cma_ib_handler: TIMEWAIT_EXIT only to an id in DISCONNECT.
    if (id.state == IdState::kDisconnect) report(id, CmEvent::kTimewaitExit, 0);
  }
  // Held-up events reach their files, in the order they were held.
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const DelayedEvent held = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    if (const auto file = files_.find(held.file); file != files_.end())
      push_event(*file->second, held.event);
  }
  deliver_local();
}

CmId* ConnectionManager::connection_of(const Message& message) {
  auto matches = [&](const CmId& id) {
    return id.cm_id && id.peer.member == message.sender.member &&
           (id.peer_id == message.local_id || id.peer_id == kUnknownId);
  };
  if (message.remote_id != kUnknownId) {
    const auto found = ids_.find(message.remote_id);
    return found != ids_.end() && matches(found->second) ? &found->second : nullptr;
  }
  for (auto& [handle, id] : ids_)
    if (id.cm_id && id.peer.member == message.sender.member && id.peer_id == message.local_id)
      return &id;
  return nullptr;
}

void ConnectionManager::receive(const Message& message) {
  switch (message.kind) {
    case MessageKind::kReq:
      on_request(message);
      break;
    case MessageKind::kSidrReq:
      on_sidr_request(message);
      break;
    default:
      if (CmId* id = connection_of(message)) {
        switch (message.kind) {
          case MessageKind::kRep:
            on_reply(*id, message);
            break;
          case MessageKind::kRtu:
            on_ready_to_use(*id);
            break;
          case MessageKind::kRej:
            on_reject(*id, message);
            break;
          case MessageKind::kDreq:
            on_disconnect_request(*id);
            break;
          case MessageKind::kDrep:
            on_disconnect_reply(*id);
            break;
          case MessageKind::kSidrRep:
            on_sidr_reply(*id, message);
            break;
          case MessageKind::kUnreachable:
            on_unreachable(*id);
            break;
          default:
            break;
        }
      }
  }
  deliver_local();
}

CmId* ConnectionManager::listener_for(uint16_t port_space, uint16_t port,
                                      const sockaddr_storage& destination, int device) {
  // cma_find_listener: by the service ID's port space and port; a listener
  // on the wildcard or loopback hears every device (of its family when it
  // is AF-only), one on an address only requests to that address.
  for (auto& [handle, id] : ids_) {
    if (id.state != IdState::kListen || id.port_space != port_space) continue;
    if (port_of(id.source.address) != port) continue;
    if (binds_no_device(id.source.address)) {
      const bool v4 = destination.ss_family == AF_INET;
      if (af_only(id, id.source.address) && (id.source.address.ss_family == AF_INET) != v4)
        continue;
      return &id;
    }
    if (id.source.device == device && same_address(id.source.address, destination)) return &id;
  }
  return nullptr;
}

void ConnectionManager::on_request(const Message& message) {
  Fabric& fabric = fabric_;
  const int device = message.target.device;
  Message answer;
  answer.remote_id = message.local_id;
  answer.target = message.sender;
  if (device < 0 || device >= static_cast<int>(fabric.devices().size())) {
    answer.kind = MessageKind::kUnreachable;  // no such port: nobody answers
    answer.sender = message.target;
    send(answer);
    return;
  }
  answer.sender = own_node(device);
  answer.local_id = kUnknownId;
  CmId* listener =
      listener_for(message.port_space, message.service_port, message.destination, device);
  if (listener == nullptr || listener->qp_type != message.qp_type) {
    // No listener on the service ID: REJ with reason 8 (cm_req_handler);
    // a listener of another QP type: the rdma_cm's REJ 28.
    answer.kind = MessageKind::kRej;
    answer.reason = listener == nullptr ? kRejectInvalidServiceId : kRejectConsumer;
    send(answer);
    return;
  }
  if (listener->backlog == 0) {
    // ucma_connect_event_handler: -ENOMEM, and the IB CM drops the REQ;
    // the active side's retries run out: UNREACHABLE.
    answer.kind = MessageKind::kUnreachable;
    send(answer);
    return;
  }
  CmId& child = make_child(*listener, message, device);
  child.path = path_to(device_at(device), child, child.peer_node(), message.sender.lid,
                       message.sender.gid, message.path_mtu);
  child.remote_qpn = message.qp_num;
  child.remote_psn = message.starting_psn;
  // cm_format_req_event: the requester's depth is this side's resources.
  child.responder_resources = message.initiator_depth;
  child.initiator_depth = message.responder_resources;
  child.retry_count = message.retry_count;
  child.rnr_retry_count = message.rnr_retry_count;

  PendingEvent pending = connect_request(*listener, child);
  rdma_ucm_conn_param& conn = pending.response.param.conn;
  conn = conn_param_of(message, kReqPrivateData - kIpHeaderBytes);
  conn.responder_resources = message.initiator_depth;
  conn.initiator_depth = message.responder_resources;
  conn.retry_count = message.retry_count;
  push_event(*files_.at(listener->file), pending);
}

void ConnectionManager::on_sidr_request(const Message& message) {
  Fabric& fabric = fabric_;
  const int device = message.target.device;
  Message answer;
  answer.kind = MessageKind::kSidrRep;
  answer.remote_id = message.local_id;
  answer.local_id = kUnknownId;
  answer.target = message.sender;
  if (device < 0 || device >= static_cast<int>(fabric.devices().size())) {
    answer.kind = MessageKind::kUnreachable;
    answer.sender = message.target;
    send(answer);
    return;
  }
  answer.sender = own_node(device);
  CmId* listener =
      listener_for(message.port_space, message.service_port, message.destination, device);
  if (listener == nullptr || listener->backlog == 0) {
    answer.reason = kSidrUnsupported;
    send(answer);
    return;
  }
  // cma_ib_new_udp_id: a child in CONNECT whose request is answered by
  // ACCEPT (SIDR REP) or REJECT.
  CmId& child = make_child(*listener, message, device);
  PendingEvent pending = connect_request(*listener, child);
  rdma_ucm_ud_param& ud = pending.response.param.ud;
  const uint8_t length = kSidrReqPrivateData - kIpHeaderBytes;
  std::memcpy(ud.private_data, message.private_data, length);
  ud.private_data_len = length;
  push_event(*files_.at(listener->file), pending);
}

CmId& ConnectionManager::make_child(const CmId& listener, const Message& message, int device) {
  // cma_ib_new_conn_id / cma_ib_new_udp_id and ucma's new context: a child
  // in CONNECT, on the listener's file, no uid until accepted; its source
  // the address asked for, on the listener's port; its destination the
  // requester's.
  CmId child;
  child.handle = new_handle();
  child.file = listener.file;
  child.port_space = listener.port_space;
  child.qp_type = listener.qp_type;
  child.state = IdState::kConnect;
  child.source.address = message.destination;
  set_port(child.source.address, message.service_port);
  child.source.device = device;
  child.source.port = 1;
  child.destination = message.source;
  child.seq_num = seq_num_for(fabric_.member(), child.handle);
  child.cm_id = true;
  child.connection = ConnectionState::kReqReceived;
  child.listener = listener.handle;
  child.peer = message.sender;
  child.peer_id = message.local_id;
  child.target = child.peer_node();
  return ids_.emplace(child.handle, child).first->second;
}

PendingEvent ConnectionManager::connect_request(CmId& listener, const CmId& child) {
  // Charged to the listener, with its uid and the child's id; it takes a
  // unit of the listener's backlog until read (ucma_connect_event_handler).
  --listener.backlog;
  PendingEvent pending;
  pending.charged = listener.handle;
  pending.connect_request = true;
  pending.response.uid = listener.uid;
  pending.response.id = child.handle;
  pending.response.event = static_cast<uint32_t>(CmEvent::kConnectRequest);
  return pending;
}

void ConnectionManager::on_reply(CmId& id, const Message& message) {
  if (id.connection != ConnectionState::kReqSent) return;
  // The passive side's node and id, as the REP names them.
  id.peer = message.sender;
  id.peer_id = message.local_id;
  id.remote_qpn = message.qp_num;
  id.remote_psn = message.starting_psn;
  id.responder_resources = message.initiator_depth;
  id.initiator_depth = message.responder_resources;
  id.rnr_retry_count = message.rnr_retry_count;
  if (id.path) {
    id.path->target = FabricNode{message.sender.member, message.sender.device};
    id.path->dlid = message.sender.lid;
    id.path->dgid = message.sender.gid;
    if (message.path_mtu != 0) id.path->mtu = std::min(id.path->mtu, message.path_mtu);
  }
  id.connection = ConnectionState::kRepReceived;
  // cma_ib_handler: CONNECT_RESPONSE (the application owns the QP), with
  // the REP's depths swapped to this side's and no retry count.
  rdma_ucm_conn_param conn = conn_param_of(message, kRepPrivateData);
  conn.responder_resources = message.initiator_depth;
  conn.initiator_depth = message.responder_resources;
  report(id, CmEvent::kConnectResponse, 0, &conn);
}

void ConnectionManager::on_ready_to_use(CmId& id) {
  if (id.connection != ConnectionState::kRepSent) return;
  id.connection = ConnectionState::kEstablished;
  report(id, CmEvent::kEstablished, 0);
}

void ConnectionManager::on_reject(CmId& id, const Message& message) {
  switch (id.connection) {
    case ConnectionState::kReqSent:
    case ConnectionState::kReqReceived:
    case ConnectionState::kRepSent:
    case ConnectionState::kRepReceived:
      break;
    default:
      return;
  }
  id.connection = ConnectionState::kNone;
  rdma_ucm_conn_param conn = conn_param_of(message, kRejPrivateData);
  conn.qp_num = 0;
  conn.flow_control = conn.rnr_retry_count = conn.srq = 0;
  report(id, CmEvent::kRejected, message.reason, &conn);
}

void ConnectionManager::on_disconnect_request(CmId& id) {
  switch (id.connection) {
    case ConnectionState::kEstablished:
    case ConnectionState::kRepSent:
      id.connection = ConnectionState::kDreqReceived;
      break;
    case ConnectionState::kDreqSent:
      // Both sides sent a DREQ: each answers the other's (cm_dreq_handler).
      enter_timewait(id);
      send(reply_to(id, MessageKind::kDrep));
      break;
    default:
      return;
  }
  if (id.state != IdState::kConnect) return;
  id.state = IdState::kDisconnect;
  report(id, CmEvent::kDisconnected, 0);
}

void ConnectionManager::on_disconnect_reply(CmId& id) {
  if (id.connection != ConnectionState::kDreqSent) return;
  enter_timewait(id);
  if (id.state != IdState::kConnect) return;
  id.state = IdState::kDisconnect;
  report(id, CmEvent::kDisconnected, 0);
}

void ConnectionManager::on_unreachable(CmId& id) {
  if (id.connection != ConnectionState::kReqSent && id.connection != ConnectionState::kSidrReqSent)
    return;
  id.connection = ConnectionState::kNone;
  report(id, CmEvent::kUnreachable, -ETIMEDOUT);
}

void ConnectionManager::on_sidr_reply(CmId& id, const Message& message) {
  if (id.connection != ConnectionState::kSidrReqSent) return;
  id.connection = ConnectionState::kNone;
  rdma_ucm_ud_param ud{};
  ud.private_data_len = kSidrRepPrivateData;
  std::memcpy(ud.private_data, message.private_data, kSidrRepPrivateData);
  if (message.reason != 0) {
    // cma_sidr_rep_handler: the SIDR status, positive.
    report(id, CmEvent::kUnreachable, message.reason, nullptr, &ud);
    return;
  }
  id.remote_qpn = message.qp_num;
  id.remote_qkey = message.qkey;
  ud.qp_num = message.qp_num;
  ud.qkey = message.qkey;
  // The address vector of the path (ib_init_ah_attr_from_path).
  const Device& device = device_at(*id.source.device);
  ud.ah_attr.port_num = id.source.port;
  if (device.ethernet()) {
    ud.ah_attr.is_global = 1;
    std::memcpy(ud.ah_attr.grh.dgid, message.sender.gid.raw, sizeof message.sender.gid.raw);
    ud.ah_attr.grh.sgid_index =
        static_cast<uint8_t>(std::max(0, device.find_gid(source_gid(device, id.source.address))));
    ud.ah_attr.grh.hop_limit = 64;
  } else {
    ud.ah_attr.dlid = message.sender.lid;
  }
  report(id, CmEvent::kEstablished, 0, nullptr, &ud);
}

void ConnectionManager::member_gone(uint32_t member) {
  // The member's kernel closed its files: each of its ids left its
  // connection as cm_destroy_id does, which this side hears as messages.
  std::vector<Message> heard;
  for (const auto& [handle, id] : ids_) {
    if (!id.cm_id || id.peer.member != member || !id.source.device) continue;
    Message message;
    message.sender = id.peer;
    message.local_id = id.peer_id;
    message.remote_id = handle;
    message.target = own_node(*id.source.device);
    switch (id.connection) {
      case ConnectionState::kReqSent:
      case ConnectionState::kRepSent:
      case ConnectionState::kRepReceived:
        message.kind = MessageKind::kRej;
        message.reason = kRejectConsumer;
        break;
      case ConnectionState::kReqReceived:
        message.kind = MessageKind::kRej;
        message.reason = kRejectTimeout;
        break;
      case ConnectionState::kEstablished:
        message.kind = MessageKind::kDreq;
        break;
      case ConnectionState::kDreqSent:
        message.kind = MessageKind::kDrep;
        break;
      case ConnectionState::kSidrReqSent:
        message.kind = MessageKind::kUnreachable;
        break;
      default:
        continue;
    }
    heard.push_back(message);
  }
  for (const Message& message : heard) receive(message);
}

}  // namespace verbfault::sim::cm

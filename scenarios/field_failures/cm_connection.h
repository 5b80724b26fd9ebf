// One RC connection through the connection manager in one process, for
// the CM field failures (F19-F22): a listener on the first simulated
// port's address (198.18.0.1, or FIELD_FAILURE_CM_ADDRESS: rxe's, say),
// an active id connecting to it, both on one event channel, whose events
// are read one at a time, as an application's event loop reads them.
// librdmacm only: the QPs are rdma_create_qp's, their CQs librdmacm's.
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace field_failures::cm {

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, std::strerror(errno));
  std::exit(1);
}

inline sockaddr_in address(int port) {
  const char* host = std::getenv("FIELD_FAILURE_CM_ADDRESS");
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host != nullptr ? host : "198.18.0.1", &in.sin_addr) != 1) {
    errno = EINVAL;
    die("FIELD_FAILURE_CM_ADDRESS");
  }
  return in;
}

struct Connection {
  rdma_event_channel* channel = nullptr;
  rdma_cm_id* listener = nullptr;
  rdma_cm_id* active = nullptr;
  rdma_cm_id* passive = nullptr;
};

// The next event of the channel (the caller acknowledges it).
inline rdma_cm_event* next_event(Connection& c) {
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(c.channel, &event) != 0) die("rdma_get_cm_event");
  if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) c.passive = event->id;
  return event;
}

// The next event, which must be `wanted` (acknowledged here).
inline void expect(Connection& c, rdma_cm_event_type wanted) {
  rdma_cm_event* event = next_event(c);
  if (event->event != wanted) {
    std::fprintf(stderr, "%s: %s where %s was expected\n", program_invocation_short_name,
                 rdma_event_str(event->event), rdma_event_str(wanted));
    std::exit(1);
  }
  rdma_ack_cm_event(event);
}

inline void make_qp(rdma_cm_id* id) {
  ibv_qp_init_attr attr{};
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, nullptr, &attr) != 0) die("rdma_create_qp");
}

// The channel, a listener on `port`, and an active id with its route
// resolved and its QP made, ready to connect.
inline Connection prepare(int port) {
  Connection c;
  c.channel = rdma_create_event_channel();
  if (c.channel == nullptr) die("rdma_create_event_channel");
  sockaddr_in to = address(port);
  if (rdma_create_id(c.channel, &c.listener, nullptr, RDMA_PS_TCP) != 0 ||
      rdma_bind_addr(c.listener, reinterpret_cast<sockaddr*>(&to)) != 0 ||
      rdma_listen(c.listener, 4) != 0)
    die("listen");
  if (rdma_create_id(c.channel, &c.active, nullptr, RDMA_PS_TCP) != 0 ||
      rdma_resolve_addr(c.active, nullptr, reinterpret_cast<sockaddr*>(&to), 2000) != 0)
    die("rdma_resolve_addr");
  expect(c, RDMA_CM_EVENT_ADDR_RESOLVED);
  if (rdma_resolve_route(c.active, 2000) != 0) die("rdma_resolve_route");
  expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED);
  make_qp(c.active);
  return c;
}

inline void connect(Connection& c) {
  rdma_conn_param conn{};
  conn.retry_count = 7;
  conn.rnr_retry_count = 7;
  if (rdma_connect(c.active, &conn) != 0) die("rdma_connect");
}

// CONNECT_REQUEST, then the passive side's QP and accept, then both sides'
// ESTABLISHED.
inline void accept_and_establish(Connection& c) {
  expect(c, RDMA_CM_EVENT_CONNECT_REQUEST);
  make_qp(c.passive);
  rdma_conn_param conn{};
  if (rdma_accept(c.passive, &conn) != 0) die("rdma_accept");
  expect(c, RDMA_CM_EVENT_ESTABLISHED);
  expect(c, RDMA_CM_EVENT_ESTABLISHED);
}

// Everything released, QPs before their ids (rdma_destroy_id(3)).
inline void release(Connection& c) {
  for (rdma_cm_id* id : {c.active, c.passive}) {
    if (id == nullptr) continue;
    if (id->qp != nullptr) rdma_destroy_qp(id);
    rdma_destroy_id(id);
  }
  if (c.listener != nullptr) rdma_destroy_id(c.listener);
  rdma_destroy_event_channel(c.channel);
}

}  // namespace field_failures::cm

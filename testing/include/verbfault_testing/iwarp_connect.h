// Connecting two QPs of one iWARP device to each other. An iWARP QP
// reaches RTS only over a connection of its lower layer (TCP, MPA) that
// the iWARP connection manager sets up: ibv_modify_qp to RTR/RTS is not
// how it is done (siw refuses it). So this does what an application
// does, through librdmacm: a listener on the device's IPv4 address, an
// active id that connects naming the first QP, and the passive side's
// accept naming the second (rdma_connect(3), rdma_accept(3):
// conn_param.qp_num for a QP not made by rdma_create_qp; the kernel's
// iw_cm finds the QP by that number and moves it to RTS once the
// connection is up). Both QPs must be in INIT first.
//
// Header-only: the provider report's probe (reports/provider/probe) and
// the field-failure programs (scenarios/field_failures/loopback_pair.h)
// connect their QP pairs with it on an iWARP device. Link librdmacm.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace verbfault::testing {

namespace iwarp_detail {

inline int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The IPv4 address of the netdev under `ctx`'s device: the first local
// address an rdma_cm id binds to on that device.
inline bool device_address(rdma_event_channel* channel, ibv_context* ctx, sockaddr_in* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* at = list; at != nullptr && !found; at = at->ifa_next) {
    if (at->ifa_addr == nullptr || at->ifa_addr->sa_family != AF_INET) continue;
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) break;
    sockaddr_in address = *reinterpret_cast<sockaddr_in*>(at->ifa_addr);
    address.sin_port = 0;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&address)) == 0 && id->verbs != nullptr &&
        std::strcmp(ibv_get_device_name(id->verbs->device), ibv_get_device_name(ctx->device)) ==
            0) {
      *out = address;
      found = true;
    }
    rdma_destroy_id(id);
  }
  freeifaddrs(list);
  return found;
}

// The next event of `channel` within the deadline, acknowledged; its type,
// and the id it came on (a connect request's: the new id).
inline bool next_event(rdma_event_channel* channel, int64_t deadline, rdma_cm_event_type* type,
                       rdma_cm_id** id, int* status) {
  pollfd p{channel->fd, POLLIN, 0};
  for (;;) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) return false;
    const int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) != 0) {
      if (errno == EAGAIN) continue;
      return false;
    }
    *type = event->event;
    *id = event->id;
    *status = event->status;
    rdma_ack_cm_event(event);
    return true;
  }
}

inline int failed(std::string* why, const std::string& step, int err) {
  *why = step + ": " + std::strerror(err);
  return err;
}

}  // namespace iwarp_detail

// 0 when both QPs are connected, else an errno with *why saying which step
// failed. The rdma_cm ids stay alive with the connection (the area's
// process ends with _exit: verbs_kit.h).
inline int iwarp_connect(ibv_context* ctx, ibv_qp* active, ibv_qp* passive, int timeout_ms,
                         std::string* why) {
  using namespace iwarp_detail;
  rdma_event_channel* channel = rdma_create_event_channel();
  if (channel == nullptr) return failed(why, "rdma_create_event_channel", errno);
  fcntl(channel->fd, F_SETFL, fcntl(channel->fd, F_GETFL) | O_NONBLOCK);
  sockaddr_in address{};
  if (!device_address(channel, ctx, &address)) {
    *why = std::string("no IPv4 address of ") + ibv_get_device_name(ctx->device) +
           "'s netdev for the rdma_cm to connect over";
    return ENODEV;
  }
  rdma_cm_id* listener = nullptr;
  rdma_cm_id* client = nullptr;
  if (rdma_create_id(channel, &listener, nullptr, RDMA_PS_TCP) != 0 ||
      rdma_create_id(channel, &client, nullptr, RDMA_PS_TCP) != 0)
    return failed(why, "rdma_create_id", errno);
  if (rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&address)) != 0)
    return failed(why, "rdma_bind_addr", errno);
  if (rdma_listen(listener, 1) != 0) return failed(why, "rdma_listen", errno);
  address.sin_port = rdma_get_src_port(listener);
  if (rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&address), timeout_ms) != 0)
    return failed(why, "rdma_resolve_addr", errno);

  const int64_t deadline = now_ms() + timeout_ms;
  bool client_up = false, server_up = false;
  rdma_conn_param param{};
  param.responder_resources = 1;
  param.initiator_depth = 1;
  while (!client_up || !server_up) {
    rdma_cm_event_type type{};
    rdma_cm_id* id = nullptr;
    int status = 0;
    if (!next_event(channel, deadline, &type, &id, &status)) {
      *why = std::string("the rdma_cm connection did not come up within ") +
             std::to_string(timeout_ms) + " ms";
      return ETIMEDOUT;
    }
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(client, timeout_ms) != 0)
          return failed(why, "rdma_resolve_route", errno);
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED:
        param.qp_num = active->qp_num;
        if (rdma_connect(client, &param) != 0) return failed(why, "rdma_connect", errno);
        break;
      case RDMA_CM_EVENT_CONNECT_REQUEST:
        param.qp_num = passive->qp_num;
        if (rdma_accept(id, &param) != 0) return failed(why, "rdma_accept", errno);
        break;
      case RDMA_CM_EVENT_ESTABLISHED:
        (id == client ? client_up : server_up) = true;
        break;
      default:
        *why = std::string("rdma_cm event ") + rdma_event_str(type) + " (status " +
               std::to_string(status) + ") while connecting";
        return ECONNREFUSED;
    }
  }
  return 0;
}

}  // namespace verbfault::testing

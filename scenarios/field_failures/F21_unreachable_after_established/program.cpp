// F21 (ofiwg/libfabric issue 12362): an endpoint's state machine asserted
// on an RDMA_CM_EVENT_UNREACHABLE that came after the connection was up.
//
//   field_failure_F21 buggy|fixed
//
// Since Linux 6.0 the kernel queues UNREACHABLE (-ETIMEDOUT) for a RoCE
// id whose neighbour changed its hardware address (cma_netevent_callback),
// also once the connection is established. The buggy state machine knows
// only DISCONNECTED in its CONNECTED state and aborts on anything else; the
// fixed one takes any error event there as the end of the connection,
// releases it and ends as a clean failure. On RoCE (the profile this
// program asks for when none is set); found by cm_unreachable on the
// initiator's establishment.
#include "cm_connection.h"
#include "loopback_pair.h"

#include <cassert>

namespace {

enum class EndpointState { connecting, connected, closed };

void f21(bool fixed) {
  namespace cm = field_failures::cm;
  cm::Connection c = cm::prepare(7921);
  cm::connect(c);
  cm::expect(c, RDMA_CM_EVENT_CONNECT_REQUEST);
  cm::make_qp(c.passive);
  rdma_conn_param conn{};
  if (rdma_accept(c.passive, &conn) != 0) cm::die("rdma_accept");
  // The initiator's endpoint: a state machine driven by its CM events. Its
  // peer (the passive side) closes the connection once it is up.
  EndpointState state = EndpointState::connecting;
  bool peer_up = false, peer_closing = false, peer_down = false;
  while (state != EndpointState::closed || !peer_down) {
    rdma_cm_event* event = cm::next_event(c);
    const rdma_cm_event_type type = event->event;
    const bool ours = event->id == c.active;
    rdma_ack_cm_event(event);
    if (!ours) {
      if (type == RDMA_CM_EVENT_ESTABLISHED) peer_up = true;
      if (type == RDMA_CM_EVENT_DISCONNECTED) {
        peer_down = true;
        if (!peer_closing) rdma_disconnect(c.passive);  // the DREP
      }
    } else if (state == EndpointState::connecting) {
      if (type != RDMA_CM_EVENT_ESTABLISHED) cm::die("connect");
      state = EndpointState::connected;
    } else if (state == EndpointState::connected) {
      switch (type) {
        case RDMA_CM_EVENT_DISCONNECTED:
          state = EndpointState::closed;
          rdma_disconnect(c.active);  // the DREP
          break;
        default:
          if (!fixed) {
            std::fprintf(stderr, "%s: unexpected %s in CONNECTED\n", program_invocation_short_name,
                         rdma_event_str(type));
            assert(!"unexpected CM event in the CONNECTED state");
            std::abort();
          }
          std::printf("%s: %s in CONNECTED: the connection is lost\n",
                      program_invocation_short_name, rdma_event_str(type));
          std::fflush(stdout);
          state = EndpointState::closed;
          rdma_disconnect(c.active);
      }
    }
    if (peer_up && state == EndpointState::connected && !peer_closing) {
      peer_closing = true;
      if (rdma_disconnect(c.passive) != 0) cm::die("rdma_disconnect");
    }
  }
  cm::release(c);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("VERBFAULT_SIM_PROFILE", "roce", 0);  // before the first device is listed
  return field_failures::run_variant(argc, argv, f21);
}

// F22: the REJECTED path nobody ran released the id before its QP.
//
//   field_failure_F22 buggy|fixed
//
// A client connects; its server (here: the network, cm_reject) rejects
// it. On that path the buggy client releases the connection id first and
// its QP after (as rping's server does on its way out): rdma_destroy_id(3)
// asks that the QP be freed before the id, whose device and PD the QP
// still uses. The fixed client frees the QP first, and both end as a clean
// failure ("the server rejected the connection"). Found by cm_reject; the
// check is cm.destroy_id_with_qp.
#include "cm_connection.h"
#include "loopback_pair.h"

namespace {

void f22(bool fixed) {
  namespace cm = field_failures::cm;
  cm::Connection c = cm::prepare(7922);
  cm::connect(c);
  rdma_cm_event* event = cm::next_event(c);
  const rdma_cm_event_type type = event->event;
  const int status = event->status;
  rdma_cm_id* const requested = event->id;  // the event is freed by its ack
  rdma_ack_cm_event(event);
  if (type == RDMA_CM_EVENT_REJECTED) {
    std::printf("%s: the server rejected the connection (status %d)\n",
                program_invocation_short_name, status);
    std::fflush(stdout);
    if (fixed) {
      rdma_destroy_qp(c.active);
      rdma_destroy_id(c.active);
    } else {
      ibv_qp* qp = c.active->qp;
      rdma_destroy_id(c.active);
      ibv_destroy_qp(qp);
    }
    c.active = nullptr;
    cm::release(c);
    return;
  }
  if (type != RDMA_CM_EVENT_CONNECT_REQUEST) {
    std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, rdma_event_str(type));
    std::exit(1);
  }
  c.passive = requested;
  cm::make_qp(c.passive);
  rdma_conn_param conn{};
  if (rdma_accept(c.passive, &conn) != 0) cm::die("rdma_accept");
  cm::expect(c, RDMA_CM_EVENT_ESTABLISHED);
  cm::expect(c, RDMA_CM_EVENT_ESTABLISHED);
  if (rdma_disconnect(c.active) != 0) cm::die("rdma_disconnect");
  cm::expect(c, RDMA_CM_EVENT_DISCONNECTED);
  rdma_disconnect(c.passive);
  cm::expect(c, RDMA_CM_EVENT_DISCONNECTED);
  cm::release(c);
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f22);
}

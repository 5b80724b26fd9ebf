// F19 (spdk/spdk issue 3347; linux-rdma/perftest PR 60): rdma_destroy_id
// never returned: an error path left a CM event unacknowledged.
//
//   field_failure_F19 buggy|fixed
//
// The client resolves its server's address. When the answer is not
// ADDR_RESOLVED (an ARP that timed out: ADDR_ERROR), the buggy error path
// reports it and cleans up, still holding the event it read: librdmacm's
// rdma_destroy_id waits until every event the kernel reported for the id
// is acknowledged (rdma_destroy_id(3): "ack all related events"), which
// never happens. The fixed path acknowledges the event before it destroys
// the id, and ends as a clean failure. Found by cm_addr_error: the error
// path only a network that fails ever runs.
#include "cm_connection.h"
#include "loopback_pair.h"

namespace {

void f19(bool fixed) {
  namespace cm = field_failures::cm;
  cm::Connection c;
  c.channel = rdma_create_event_channel();
  if (c.channel == nullptr) cm::die("rdma_create_event_channel");
  if (rdma_create_id(c.channel, &c.active, nullptr, RDMA_PS_TCP) != 0) cm::die("rdma_create_id");
  sockaddr_in to = cm::address(7919);
  if (rdma_resolve_addr(c.active, nullptr, reinterpret_cast<sockaddr*>(&to), 2000) != 0)
    cm::die("rdma_resolve_addr");
  rdma_cm_event* event = cm::next_event(c);
  if (event->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
    std::printf("%s: address resolution failed: %s, status %d\n", program_invocation_short_name,
                rdma_event_str(event->event), event->status);
    std::fflush(stdout);
    if (fixed) rdma_ack_cm_event(event);  // the buggy path returns holding it
    rdma_destroy_id(c.active);            // ...and waits here for its ack
    rdma_destroy_event_channel(c.channel);
    return;
  }
  rdma_ack_cm_event(event);
  rdma_destroy_id(c.active);
  rdma_destroy_event_channel(c.channel);
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f19);
}

// F20 (spdk/spdk issue 3592): the target waited forever for a DISCONNECTED
// that never came after its initiator died.
//
//   field_failure_F20 buggy|fixed
//
// A target (the passive side) releases a connection's resources when its
// DISCONNECTED arrives. Its initiator goes away (here: disconnects), and
// the DREQ that would say so is lost: the buggy target waits in
// rdma_get_cm_event for an event that never comes. The fixed target reads
// its events without blocking (the channel's fd O_NONBLOCK) and gives the
// DISCONNECTED a deadline; when none comes it disconnects the connection
// itself (its DREP: the initiator's side ends too) and releases it, and
// does not wait for the initiator's side without a deadline either. Found
// by cm_lost_disconnect on the target's id.
#include "cm_connection.h"
#include "loopback_pair.h"

#include <fcntl.h>
#include <time.h>

namespace {

void f20(bool fixed) {
  namespace cm = field_failures::cm;
  cm::Connection c = cm::prepare(7920);
  cm::connect(c);
  cm::accept_and_establish(c);
  // The initiator goes away.
  if (rdma_disconnect(c.active) != 0) cm::die("rdma_disconnect");
  bool passive_down = false, active_down = false;
  if (fixed) fcntl(c.channel->fd, F_SETFL, fcntl(c.channel->fd, F_GETFL) | O_NONBLOCK);
  int tries = 0;
  while (!passive_down || !active_down) {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(c.channel, &event) != 0) {
      if (errno != EAGAIN) cm::die("rdma_get_cm_event");
      // No event yet: after 20 tries 10 ms apart, the initiator is gone;
      // 20 more, and the initiator's own DISCONNECTED (the answer to the
      // target's DREQ, which may be lost as well) is not waited for either.
      ++tries;
      if (!passive_down && tries >= 20) {
        std::printf("%s: no DISCONNECTED within 200 ms: the initiator is gone\n",
                    program_invocation_short_name);
        std::fflush(stdout);
        rdma_disconnect(c.passive);
        passive_down = true;
      } else if (passive_down && !active_down && tries >= 40) {
        std::printf("%s: the initiator's DISCONNECTED did not come either\n",
                    program_invocation_short_name);
        std::fflush(stdout);
        active_down = true;
      }
      const timespec pause{0, 10'000'000};
      nanosleep(&pause, nullptr);
      continue;
    }
    if (event->event == RDMA_CM_EVENT_DISCONNECTED) {
      if (event->id == c.passive) {
        passive_down = true;
        rdma_disconnect(c.passive);  // the DREP
      } else {
        active_down = true;
      }
    }
    rdma_ack_cm_event(event);
  }
  cm::release(c);
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f20);
}

// The CM events a program holds: taken from rdma_get_cm_event and not yet
// given back with rdma_ack_cm_event. librdmacm counts them per id (its
// events_completed against the kernel's events_reported) and
// rdma_destroy_id waits until every event the id was reported is
// acknowledged (rdma_destroy_id(3): "ack all related events" first), so an
// event kept is a destroy that never returns (perftest PR 60, SPDK #3347).
// The front door calls these around librdmacm's own functions
// (frontdoor/exports_rdmacm.cpp), whichever connection manager serves the
// files: the simulated one, or a kernel's behind the relay.
#pragma once

#include "interposer.h"

struct rdma_cm_event;
struct rdma_cm_id;

namespace verbfault::interposer::cm_events {

// rdma_get_cm_event returned `event`.
void got(Run& run, const rdma_cm_event* event);
// rdma_ack_cm_event(event) is called. False: `event` was acknowledged
// already (cm.event_acked_twice): librdmacm freed it at that ack and must
// not be given it again.
bool acked(Run& run, const rdma_cm_event* event);
// rdma_destroy_id(id) is called: the events of `id` still held are
// cm.destroy_id_unacked_events (the run ends when no other thread could
// acknowledge them).
void destroying(Run& run, const rdma_cm_id* id);

}  // namespace verbfault::interposer::cm_events

// Conditions of the simulated fabric, for tests and scenarios.
//
// Each call makes the simulated device really enter the condition, with the
// whole chain of consequences the spec attaches to it (IBA 11.6.3, the
// ibv_get_async_event(3) man page): async events on every context of the
// device, QPs moved to ERR with their work flushed, later verbs failing.
// Every call returns 0, ENODEV when the object is not on a simulated
// device, or EINVAL for a bad port, index or event type.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbfault::fabric {

// Not ACTIVE: IBV_EVENT_PORT_ERR; RC traffic through the port ends in
// IBV_WC_RETRY_EXC_ERR. Back to ACTIVE: IBV_EVENT_PORT_ACTIVE.
int set_port_state(ibv_context* context, uint8_t port, ibv_port_state state);
// IBV_EVENT_LID_CHANGE; messages to the old LID no longer arrive.
int set_port_lid(ibv_context* context, uint8_t port, uint16_t lid);
// IBV_EVENT_GID_CHANGE.
int set_gid(ibv_context* context, uint8_t port, int index, const ibv_gid& gid);
// IBV_EVENT_DEVICE_FATAL on every context of the device; every QP goes to
// ERR (its WRs are flushed and stay pollable); then every verb but
// destroy, poll and event handling fails with EIO.
int device_fatal(ibv_context* context);

// An affiliated asynchronous error or event, with its consequences:
// QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR move the QP to ERR; SRQ_ERR moves
// every QP on the SRQ to ERR; CQ_ERR puts the CQ in error and every QP on
// it gets QP_FATAL. PATH_MIG, PATH_MIG_ERR, COMM_EST, SQ_DRAINED,
// QP_LAST_WQE_REACHED and SRQ_LIMIT_REACHED are the event only.
int raise_event(ibv_qp* qp, ibv_event_type type);
int raise_event(ibv_srq* srq, ibv_event_type type);
int raise_event(ibv_cq* cq, ibv_event_type type);

}  // namespace verbfault::fabric

// Conditions of the simulated fabric that a test or the fault engine can
// bring about: a port going down, a LID or GID changing, a fatal device
// error, an asynchronous error on a QP, SRQ or CQ. Each is caused, not
// faked: the device enters the condition and produces its whole chain of
// consequences (async events on every context of the device, QPs moved to
// ERR with their work flushed, later verbs failing) as IBA 11.6.3 and the
// ibv_get_async_event(3) man page describe.
//
// Every call returns 0, or ENODEV when the object is not on a simulated
// device, or EINVAL for a bad port, index or event type.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace verbfault::sim {

// IBV_PORT_DOWN (or any state but ACTIVE) raises IBV_EVENT_PORT_ERR and
// makes RC traffic through the port end in IBV_WC_RETRY_EXC_ERR; back to
// IBV_PORT_ACTIVE raises IBV_EVENT_PORT_ACTIVE.
int set_port_state(ibv_context* context, uint8_t port, ibv_port_state state);
// IBV_EVENT_LID_CHANGE; traffic addressed to the old LID no longer arrives.
int set_port_lid(ibv_context* context, uint8_t port, uint16_t lid);
// IBV_EVENT_GID_CHANGE.
int set_gid(ibv_context* context, uint8_t port, int index, const ibv_gid& gid);
// IBV_EVENT_DEVICE_FATAL on every context of the device; every QP goes to
// ERR and its work is flushed (completions stay pollable); afterwards every
// verb but destroy, poll and event handling fails with EIO.
int device_fatal(ibv_context* context);

// An affiliated asynchronous event with its consequences:
//   QP: IBV_EVENT_QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR -> QP to ERR, flush;
//       IBV_EVENT_PATH_MIG_ERR, PATH_MIG, COMM_EST, SQ_DRAINED,
//       QP_LAST_WQE_REACHED -> the event only.
//   SRQ: IBV_EVENT_SRQ_ERR -> every QP on the SRQ to ERR;
//        IBV_EVENT_SRQ_LIMIT_REACHED -> the event only.
//   CQ: IBV_EVENT_CQ_ERR -> the CQ in error, every QP on it QP_FATAL + ERR.
int raise_qp_event(ibv_qp* qp, ibv_event_type type);
int raise_srq_event(ibv_srq* srq, ibv_event_type type);
int raise_cq_event(ibv_cq* cq, ibv_event_type type);

// ibv_post_send with fabric conditions for some of its WRs, brought about
// in the same step as the post (so no other thread's WR can take them):
// failures[i] applies to the i-th WR of the list. An RNR NAK answers every
// attempt of that WR until the requester exhausts rnr_retry (7 included:
// the injected exhaustion gives up after 7 retries): IBV_WC_RNR_RETRY_EXC_ERR;
// or no answer comes until it exhausts retry_cnt: IBV_WC_RETRY_EXC_ERR. The
// responder never sees the message; the QP goes to ERR and the rest is
// flushed, as for the natural condition. Returns what ibv_post_send does.
enum class SendFailure : uint8_t { none, rnr_nak, no_answer };
int post_send_with_failures(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr,
                            const std::vector<SendFailure>& failures);

// A completion event with no completion behind it: an armed CQ with a
// channel fires now (ibv_get_cq_event(3) warns that events may come
// without completions). EAGAIN when the CQ is not armed.
int notify_cq(ibv_cq* cq);

}  // namespace verbfault::sim

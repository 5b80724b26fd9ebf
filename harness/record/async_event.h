// What an asynchronous event is about (ibv_get_async_event(3)): a QP, an
// SRQ, a CQ or a WQ it names in `element`, or the port or the device. The
// one mapping every layer of the harness uses (the engine to match and
// inject, the interposer to name the element, the provider to route the
// acknowledgement). The simulated device keeps its own, below everything.
#pragma once

#include "verbfault/plan.h"

#include <infiniband/verbs.h>

namespace verbfault::record {

enum class EventElement { qp, srq, cq, wq, port_or_device };

constexpr EventElement event_element(ibv_event_type type) {
  switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return EventElement::qp;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return EventElement::srq;
    case IBV_EVENT_CQ_ERR:
      return EventElement::cq;
    case IBV_EVENT_WQ_FATAL:
      return EventElement::wq;
    default:  // port events, DEVICE_FATAL, SM and client reregister events
      return EventElement::port_or_device;
  }
}

// The kind of harness object an event of `type` is about: a QP, SRQ or CQ,
// else the context (port and device events; WQs are not named objects).
constexpr ObjectKind element_kind(ibv_event_type type) {
  switch (event_element(type)) {
    case EventElement::qp:
      return ObjectKind::qp;
    case EventElement::srq:
      return ObjectKind::srq;
    case EventElement::cq:
      return ObjectKind::cq;
    default:
      return ObjectKind::context;
  }
}

// The object `event` names (nullptr: a port or device event).
inline const void* element_of(const ibv_async_event& event) {
  switch (event_element(event.event_type)) {
    case EventElement::qp:
      return event.element.qp;
    case EventElement::srq:
      return event.element.srq;
    case EventElement::cq:
      return event.element.cq;
    case EventElement::wq:
      return event.element.wq;
    case EventElement::port_or_device:
      break;
  }
  return nullptr;
}

// The context of the object `event` names (nullptr: a port or device event).
inline const ibv_context* element_context(const ibv_async_event& event) {
  switch (event_element(event.event_type)) {
    case EventElement::qp:
      return event.element.qp->context;
    case EventElement::srq:
      return event.element.srq->context;
    case EventElement::cq:
      return event.element.cq->context;
    case EventElement::wq:
      return event.element.wq->context;
    case EventElement::port_or_device:
      break;
  }
  return nullptr;
}

}  // namespace verbfault::record

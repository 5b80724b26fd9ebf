// Completion and asynchronous events, routed to the simulated device or
// the real libibverbs.
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"
#include "verbs.h"

namespace verbfault::provider {

namespace {

// The context of the object an async event is about, or nullptr for a port
// or device event (ibv_get_async_event(3)).
const ibv_context* event_context(const ibv_async_event* event) {
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      return event->element.cq->context;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return event->element.srq->context;
    case IBV_EVENT_WQ_FATAL:
      return event->element.wq->context;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_DEVICE_FATAL:
      return nullptr;
    default:
      return event->element.qp->context;
  }
}

}  // namespace

int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (simulated(channel)) return sim::get_cq_event(channel, cq, cq_context);
  return VERBFAULT_REAL(ibv_get_cq_event, "IBVERBS_1.1")(channel, cq, cq_context);
}

void ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (simulated(cq)) return sim::ack_cq_events(cq, nevents);
  VERBFAULT_REAL(ibv_ack_cq_events, "IBVERBS_1.1")(cq, nevents);
}

int get_async_event(ibv_context* context, ibv_async_event* event) {
  if (simulated(context)) return sim::get_async_event(context, event);
  return VERBFAULT_REAL(ibv_get_async_event, "IBVERBS_1.1")(context, event);
}

void ack_async_event(ibv_async_event* event) {
  const ibv_context* context = event_context(event);
  // Port and device events carry no object: there is nothing to count.
  if (context == nullptr || simulated(context)) return sim::ack_async_event(event);
  VERBFAULT_REAL(ibv_ack_async_event, "IBVERBS_1.1")(event);
}

}  // namespace verbfault::provider

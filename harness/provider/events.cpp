// The asynchronous event's acknowledgement, routed by the event's element
// (the other event calls are routed by routing.cpp).
#include "async_event.h"
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"
#include "verbs.h"

namespace verbfault::provider {

void ack_async_event(ibv_async_event* event) {
  const ibv_context* context = record::element_context(*event);
  // Port and device events carry no object: there is nothing to count.
  if (context == nullptr || simulated(context)) return sim::ack_async_event(event);
  VERBFAULT_REAL(ibv_ack_async_event, "IBVERBS_1.1")(event);
}

}  // namespace verbfault::provider

// Completion and asynchronous events, routed to the simulated device or
// the real libibverbs.
#include "async_event.h"
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"
#include "verbs.h"

namespace verbfault::provider {

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
  const ibv_context* context = record::element_context(*event);
  // Port and device events carry no object: there is nothing to count.
  if (context == nullptr || simulated(context)) return sim::ack_async_event(event);
  VERBFAULT_REAL(ibv_ack_async_event, "IBVERBS_1.1")(event);
}

}  // namespace verbfault::provider

// The simulated device's conditions and observations, for the engine and
// the runtime checks (fakes/include/verbfault/sim/conditions.h).
#include "conditions.h"

#include "observation.h"
#include "verbfault/sim/conditions.h"
#include "verbfault/sim/provider.h"

namespace verbfault::provider {

#define VERBFAULT_FORWARD_CONDITION(name, params, args) \
  int name params {                                     \
    return sim::name args;                              \
  }
VERBFAULT_CONDITIONS(VERBFAULT_FORWARD_CONDITION)
#undef VERBFAULT_FORWARD_CONDITION

int post_send_with_failures(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr,
                            const std::vector<SendFailure>& failures) {
  std::vector<sim::SendFailure> device(failures.size());
  for (std::size_t i = 0; i < failures.size(); ++i)
    device[i] = static_cast<sim::SendFailure>(failures[i]);
  return sim::post_send_with_failures(qp, wr, bad_wr, device);
}

void set_freedom_seed(std::optional<std::uint64_t> seed) {
  sim::set_freedom_seed(seed);
}

void set_wait_permission(bool (*may_wait)()) {
  sim::set_wait_permission(may_wait);
}

void set_ack_possible(bool (*others_may_ack)()) {
  sim::set_ack_possible(others_may_ack);
}

bool shares_fabric() {
  return sim::shares_fabric();
}

bool waiting_for_another_process() {
  return sim::waiting_for_another_process();
}

void idle_outside(bool idle, std::span<const int> fds) {
  sim::idle_outside(idle, fds);
}

bool timing_notes_pending() {
  return sim::timing_notes_pending();
}
std::vector<std::string> take_timing_notes() {
  return sim::take_timing_notes();
}

std::size_t cq_depth(ibv_cq* cq) {
  return sim::cq_depth(cq);
}
bool cq_event_pending(ibv_cq* cq) {
  return sim::cq_event_pending(cq);
}
int device_threads() {
  return sim::device_threads();
}

bool work_pending() {
  return sim::work_pending();
}

bool advance_device_clock(std::span<const int> fds) {
  return sim::advance_clock(fds);
}

}  // namespace verbfault::provider

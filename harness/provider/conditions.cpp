// The simulated device's conditions and observations, for the engine and
// the runtime checks (fakes/include/verbfault/sim/conditions.h).
#include "conditions.h"

#include "observation.h"
#include "verbfault/sim/conditions.h"
#include "verbfault/sim/provider.h"

namespace verbfault::provider {

int set_port_state(ibv_context* context, uint8_t port, ibv_port_state state) {
  return sim::set_port_state(context, port, state);
}
int set_port_lid(ibv_context* context, uint8_t port, uint16_t lid) {
  return sim::set_port_lid(context, port, lid);
}
int set_gid(ibv_context* context, uint8_t port, int index, const ibv_gid& gid) {
  return sim::set_gid(context, port, index, gid);
}
int device_fatal(ibv_context* context) {
  return sim::device_fatal(context);
}
int raise_qp_event(ibv_qp* qp, ibv_event_type type) {
  return sim::raise_qp_event(qp, type);
}
int raise_srq_event(ibv_srq* srq, ibv_event_type type) {
  return sim::raise_srq_event(srq, type);
}
int raise_cq_event(ibv_cq* cq, ibv_event_type type) {
  return sim::raise_cq_event(cq, type);
}
int notify_cq(ibv_cq* cq) {
  return sim::notify_cq(cq);
}

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

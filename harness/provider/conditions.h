// What the engine may do to a simulated device beyond the verbs: bring it
// into a fault's condition (cause level), so that the device produces the
// whole chain of consequences itself (fakes/include/verbfault/sim/
// conditions.h says what each one does). Each returns 0, or ENODEV when the
// object is not on a simulated device, or EINVAL.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace verbfault::provider {

int set_port_state(ibv_context* context, uint8_t port, ibv_port_state state);
int set_port_lid(ibv_context* context, uint8_t port, uint16_t lid);
int set_gid(ibv_context* context, uint8_t port, int index, const ibv_gid& gid);
int device_fatal(ibv_context* context);
int raise_qp_event(ibv_qp* qp, ibv_event_type type);
int raise_srq_event(ibv_srq* srq, ibv_event_type type);
int raise_cq_event(ibv_cq* cq, ibv_event_type type);
// A completion event with no completion behind it (armed CQ with a channel).
int notify_cq(ibv_cq* cq);

// ibv_post_send whose WRs meet fabric conditions (failures[i] for WR i).
enum class SendFailure : uint8_t { none, rnr_nak, no_answer };
int post_send_with_failures(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr,
                            const std::vector<SendFailure>& failures);

// Freedoms: where the verbs leave a choice to the provider, the simulated
// device draws it from `seed` (std::nullopt: the canonical choice).
void set_freedom_seed(std::optional<std::uint64_t> seed);
// Whether a thread may block in the simulated device waiting for another
// process (no other application thread could run meanwhile): asked by the
// device, answered by the harness.
void set_wait_permission(bool (*may_wait)());
// Whether another application thread could still acknowledge events (a
// simulated destroy then waits for them, as libibverbs does): asked by the
// device, answered by the harness.
void set_ack_possible(bool (*others_may_ack)());

}  // namespace verbfault::provider

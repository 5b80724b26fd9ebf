// What the engine may do to a simulated device beyond the verbs: bring it
// into a fault's condition (cause level), so that the device produces the
// whole chain of consequences itself (the conditions: condition_table.h),
// and the device's freedoms and its questions to the harness.
#pragma once

#include "condition_table.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace verbfault::provider {

#define VERBFAULT_DECLARE_CONDITION(name, params, args) int name params;
VERBFAULT_CONDITIONS(VERBFAULT_DECLARE_CONDITION)
#undef VERBFAULT_DECLARE_CONDITION

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

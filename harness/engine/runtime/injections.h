// Faults injected by driving the provider (not by rewriting a result).
// Called with the interposer lock NOT held: they take it (FaultEngine::lock)
// only around the engine's state, never across a provider call.
#pragma once

#include "fault_engine.h"
#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string_view>

namespace verbfault::engine::inject {

// How a fault was injected; the trace and the reports state it.
enum class Level : std::uint8_t {
  cause,        // the simulated device entered the condition itself
  effect,       // the interposer rewrote results / drove the provider
  unsupported,  // this fault cannot be injected on this provider yet
};
std::string_view to_string(Level level);

struct Target {
  const void* object = nullptr;  // the verbs object the fault is on
  ibv_context* context = nullptr;
  bool simulated = false;
};


void qp_to_error(ibv_qp* qp);
Level async_event(FaultEngine& engine, const Target& target, ibv_event_type type,
                  std::uint8_t port);
Level cq_overflow(FaultEngine& engine, const Target& target);
Level port_down(FaultEngine& engine, const Target& target, std::uint8_t port);
Level device_fatal(FaultEngine& engine, const Target& target);
// A completion event with no completion behind it (ibv_get_cq_event(3)).
Level spurious_cq_event(FaultEngine& engine, ibv_cq* cq, bool simulated);

}  // namespace verbfault::engine::inject

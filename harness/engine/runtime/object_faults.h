// What the fault engine keeps of one verbs object: the faults decided for it that are still to take
// effect (a doomed WR, completions held back, an event to absorb), and, on a real provider, the
// conditions the engine emulates (effect level) with the events it injected. One per registry slot,
// in the engine's own table.
//
// Owner: the FaultEngine; guarded by the interposer lock like it.
#pragma once

#include "injected_events.h"
#include "object.h"
#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace verbfault::engine {

// Opportunities of one rule on one object, and how often it fired there.
struct Counter {
  std::uint64_t opportunities = 0;
  std::uint64_t fired = 0;
};

// A posted work request whose completion the engine will turn into an
// error (effect level).
struct DoomedWr {
  std::uint64_t wr_id = 0;
  Side side = Side::send;
  ibv_wc_status status = IBV_WC_GENERAL_ERR;
  std::uint32_t rule = 0;
};

struct ObjectFaults {
  const record::Object* object = nullptr;  // nullptr: the slot is free

  // QPs.
  std::deque<DoomedWr> doomed;
  bool injected_error = false;  // completions polled from now on are flushes

  // CQs.
  std::vector<ibv_wc> held;        // completions held back (delayed_completion)
  std::uint32_t held_polls = 0;    // empty polls until `held` is released (0: it is)
  bool absorb_next_event = false;  // coalesce_cq_event pending
  bool armed = false;              // req_notify_cq since the last event delivered
  // A real provider's CQ whose arm an injected event answered (a spurious
  // event delivered while the application had it armed): the provider is
  // still armed, and its next event answers an arm the application saw
  // answered already, so it is swallowed unless the application re-arms
  // first, as the simulated device's own spurious event disarms the CQ
  // (ibv_req_notify_cq(3): one arm, one event).
  bool provider_arm_spent = false;

  // Effect level on a real provider: the wrapped fd of a channel or a
  // context, the events injected into it, and the conditions emulated.
  EventFd events;
  std::deque<ibv_cq*> injected_cq_events;  // channels
  // Channels: the provider's events the harness read while it waited for
  // another CQ's (coalesce_cq_event on a real provider), for the
  // application, first; acknowledged to the provider as any of its own.
  std::deque<ibv_cq*> kept_provider_events;
  std::deque<ibv_async_event> injected_async;           // contexts: not yet read
  std::vector<ibv_async_event> injected_async_unacked;  // contexts: read, not acked
  unsigned injected_cq_unacked = 0;                     // CQs: injected events read, not acked
  bool overflowed = false;                              // CQs: in error after an injected overflow
  bool port_down = false;                               // contexts
  bool dead = false;                                    // contexts: after an injected DEVICE_FATAL
  // (The counters of the rules on this object are the engine's, in one
  // flat table by slot: FaultEngine::counter.)
};

}  // namespace verbfault::engine

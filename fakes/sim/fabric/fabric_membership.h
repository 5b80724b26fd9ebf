// Which local fabric this process's simulated devices are on, and as which
// member (docs/local-fabric.md, "The local fabric").
//
// VERBFAULT_FABRIC names the fabric: unset, the user's default fabric
// ("user-<uid>"), so that two processes started by hand reach each other;
// `private`, no fabric: the devices reach only each other, inside the
// process. VERBFAULT_PROC=N asks for member index N (`verbfault run` gives
// the i-th command index i), which fixes the process's LIDs, GIDs and QP
// numbers; unset, the lowest free index. VERBFAULT_FABRIC_SIZE=N says the
// run has N processes: the fabric is not quiescent (fabric_wait.h) before N
// members have joined it, so a process that is first to wait does not take
// a peer that has not started yet for one that will never send.
#pragma once

#include "wire/endpoint.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace verbfault::sim {

struct FabricMembership {
  uint32_t member = 0;
  uint32_t expected = 0;                     // VERBFAULT_FABRIC_SIZE (0: unset)
  std::unique_ptr<wire::Endpoint> endpoint;  // nullptr: private
  std::string error;                         // one line: the devices are withheld

  static FabricMembership from_environment();
  // A child made by fork(2) of a member: the same fabric, at the lowest
  // free index (the parent's VERBFAULT_PROC or rank is the parent's).
  static FabricMembership for_forked_child();
};

}  // namespace verbfault::sim

// Which local fabric this process's simulated devices are on, and as which
// member (docs/architecture.md, "The local fabric").
//
// VERBFAULT_FABRIC names the fabric: unset, the user's default fabric
// ("user-<uid>"), so that two processes started by hand reach each other;
// `private`, no fabric: the devices reach only each other, inside the
// process. VERBFAULT_PROC=N asks for member index N (`verbfault run` gives
// the i-th command index i), which fixes the process's LIDs, GIDs and QP
// numbers; unset, the lowest free index.
#pragma once

#include "wire/endpoint.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace verbfault::sim {

struct FabricMembership {
  uint32_t member = 0;
  std::unique_ptr<wire::Endpoint> endpoint;  // nullptr: private
  std::string error;                         // one line: the devices are withheld

  static FabricMembership from_environment();
};

}  // namespace verbfault::sim

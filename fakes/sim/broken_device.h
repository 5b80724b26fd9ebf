// Test builds only (VERBFAULT_BROKEN_DEVICE, property_tests_broken): the
// simulated device broken on purpose, one way at a time, so that each
// property is seen to catch a device that gets its rule wrong. The way is
// read from VERBFAULT_BROKEN:
//   drop_completion  every 5th completion of a CQ is lost
//   unarmed_event    every completion raises an event, armed or not
//   ignore_acks      ibv_destroy_cq does not look at unacknowledged events
//   random_poll      how many completions a poll returns is drawn from
//                    std::random_device, not from the seed
#pragma once

#ifdef VERBFAULT_BROKEN_DEVICE

#include <cstdlib>
#include <string_view>

namespace verbfault::sim {

inline bool broken(std::string_view way) {
  static const char* const chosen = std::getenv("VERBFAULT_BROKEN");
  return chosen != nullptr && way == chosen;
}

}  // namespace verbfault::sim

#endif

#include "held_completions.h"

#include "completions.h"

namespace verbfault::interposer {

bool release_after_empty_poll(Run& run, Tracked& cq) {
  engine::ObjectFaults& faults = *cq.faults;
  if (!engine::released_by_empty_poll(faults)) return false;
  run.record(record::CallRecord(cq.id())
                   .add("held", faults.held.size())
                   .add("visible", "after_empty_poll"));
  // The simulated device knows whether the CQ is armed (provider::notify_cq
  // fires only then); a real provider's CQ was armed through the harness.
  return cq.simulated || faults.armed;
}

}  // namespace verbfault::interposer

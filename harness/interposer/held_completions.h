// delayed_completion's release at an empty poll: the held completions
// arrive just after the poll that found the CQ empty, before the polling
// thread's next call. In an event loop that next call is the arm, so they
// are "a completion between an empty poll and the arm" (brpc #3415,
// libfabric #796): present when the CQ is armed, they raise no event
// (IBA 11.4.2.2, ibv_req_notify_cq(3)), and only a loop that polls once
// more after arming finds them.
#pragma once

#include "run.h"

namespace verbfault::interposer {

// After an empty poll of `cq` (lock held): when it was the last of the empty
// polls the held completions wait for, releases them (the next poll returns
// them) and records it. Returns whether an event is owed: the CQ was armed
// before they arrived, so its arm covers them (the caller injects it
// without the lock: inject::spurious_cq_event).
bool release_after_empty_poll(Run& run, Tracked& cq);

}  // namespace verbfault::interposer

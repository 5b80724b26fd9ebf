// Polling a CQ of a process that may hear from another one (docs/
// local-fabric.md, "Determinism across processes"): what ibv_poll_cq and
// the extended CQ's start_poll/next_poll share.
#pragma once

#include <infiniband/verbs.h>

#include <mutex>

namespace verbfault::sim {

class CompletionQueue;

// Polls up to `n` completions of `cq` under Fabric::mutex (held by `guard`;
// released while the poll waits): what is visible, else the CQ's next held
// delivery from another process, waited for while one may come
// (fabric_wait.h), else what moving the virtual clock raises. One delivery
// per poll, so that how many a poll returns does not depend on when frames
// arrived. The number polled, or a negative errno (a CQ in error).
int poll_from_fabric(std::unique_lock<std::mutex>& guard, CompletionQueue& cq, int n,
                     ibv_wc* wc);

}  // namespace verbfault::sim

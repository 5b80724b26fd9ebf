// ibv_comp_channel: completion events, delivered through a real fd.
#pragma once

#include "handle.h"
#include "readiness_fd.h"
#include "ring.h"

#include <infiniband/verbs.h>

namespace verbfault::sim {

class CompletionQueue;
class Context;

// Events wait here until ibv_get_cq_event(3) takes them; the fd is readable
// exactly while one waits. Guarded by Fabric::mutex; waiters block on
// Fabric::wakeup.
class CompletionChannel {
 public:
  explicit CompletionChannel(Context& context);

  ibv_comp_channel* verbs() { return &handle_.verbs; }
  static CompletionChannel* from(ibv_comp_channel* c) {
    return owner_of<CompletionChannel, ibv_comp_channel>(c);
  }
  Context& context() { return context_; }
  bool valid() const { return fd_.valid(); }
  bool nonblocking() const { return fd_.nonblocking(); }

  void notify(CompletionQueue* cq);
  bool has_event() const { return !events_.empty(); }
  bool has_event_of(const CompletionQueue* cq) const {
    for (const CompletionQueue* pending : events_)
      if (pending == cq) return true;
    return false;
  }
  CompletionQueue* take_event();
  // Drops the events of a CQ being destroyed that nobody has read (the
  // kernel does the same: only events read count as reported).
  void discard_events_of(const CompletionQueue* cq);

  int attached_cqs = 0;  // ibv_destroy_comp_channel: EBUSY while > 0

 private:
  Handle<ibv_comp_channel, CompletionChannel> handle_;
  Context& context_;
  ReadinessFd fd_;
  Ring<CompletionQueue*> events_;  // a ring: a steady event loop allocates nothing
};

}  // namespace verbfault::sim

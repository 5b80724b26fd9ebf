#include "completion_channel.h"

#include "context.h"
#include "fabric.h"

#include <algorithm>

namespace verbfault::sim {

CompletionChannel::CompletionChannel(Context& context) : context_(context) {
  handle_.owner = this;
  handle_.verbs.context = context.verbs();
  handle_.verbs.fd = fd_.fd();
  handle_.verbs.refcnt = 0;
}

void CompletionChannel::notify(CompletionQueue* cq) {
  events_.push_back(cq);
  fd_.set_ready(true);
  context_.fabric().notify_waiters();
}

CompletionQueue* CompletionChannel::take_event() {
  CompletionQueue* cq = events_.front();
  events_.pop_front();
  fd_.set_ready(!events_.empty());
  return cq;
}

void CompletionChannel::discard_events_of(const CompletionQueue* cq) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < events_.size(); ++i)
    if (events_[i] != cq) events_[kept++] = events_[i];
  while (events_.size() > kept) events_.pop_back();
  fd_.set_ready(!events_.empty());
}

}  // namespace verbfault::sim

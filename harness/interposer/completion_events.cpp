// ibv_get_cq_event / ibv_ack_cq_events through the interposer: injected,
// dropped and coalesced events, held completions released before a wait,
// the checks' view of event bookkeeping, and the records.
#include "calls.h"
#include "run.h"
#include "hang_watchdog.h"
#include "saved_ops.h"
#include "thread_calls.h"
#include "verbs.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace verbfault::interposer {

namespace {

// A completion event from a wrapped (real provider) channel: an injected
// one first (`injected` says so), else the provider's own through its fd;
// waits on the application's fd unless it is non-blocking.
int next_wrapped_cq_event(Run& run, ibv_comp_channel* channel, ibv_cq** cq, void** cq_context,
                          bool& injected) {
  injected = false;
  for (;;) {
    engine::EventFd fds;
    {
      std::unique_lock lock(run.mutex);
      Tracked* tracked = run.registry.find(channel);
      if (tracked == nullptr || !tracked->faults->events.wrapped()) {
        lock.unlock();  // the provider may block
        return provider::get_cq_event(channel, cq, cq_context);
      }
      if (!tracked->faults->kept_provider_events.empty()) {
        *cq = tracked->faults->kept_provider_events.front();
        tracked->faults->kept_provider_events.pop_front();
        tracked->faults->events.consume();
        *cq_context = (*cq)->cq_context;
        return 0;
      }
      if (!tracked->faults->injected_cq_events.empty()) {
        *cq = tracked->faults->injected_cq_events.front();
        tracked->faults->injected_cq_events.pop_front();
        tracked->faults->events.consume();
        *cq_context = (*cq)->cq_context;
        if (Tracked* target = run.registry.find(*cq)) ++target->faults->injected_cq_unacked;
        injected = true;
        return 0;
      }
      fds = tracked->faults->events;
    }
    // libibverbs reads the event from channel->fd only: a copy of the
    // channel with the provider's fd reads the provider's event.
    ibv_comp_channel provider_channel = *channel;
    provider_channel.fd = fds.provider_fd();
    if (provider::get_cq_event(&provider_channel, cq, cq_context) == 0) return 0;
    if (errno != EAGAIN || fds.nonblocking()) return -1;
    fds.wait();
  }
}

// How long coalescing on a real provider waits for the CQ's next
// completion: a burst's next completion comes within microseconds (rxe
// loops back in the kernel), and a lone completion's event is held no
// longer than this.
constexpr std::uint64_t kCoalesceWindowNs = 50'000'000;

// coalesce_cq_event (lock not held): the event just
// taken for `cq` is to stand for its next completion too, as when two
// complete before the application looks (a device raises one event for
// both). The harness arms the CQ itself and waits up to kCoalesceWindowNs
// (on the virtual clock for a scheduled thread, whose peers run meanwhile
// and may be what completes next) for that completion's event, which it takes and acknowledges to
// the provider; the application then finds both completions behind one event (a program that takes
// one completion per event is left with the second and no event for it, on every provider). An
// event of another CQ of the channel meanwhile is kept for the application. Whether one was merged;
// if none came, the provider stays armed by the harness, and its next
// event answers an arm the application did not make: swallowed unless the
// application re-arms first (provider_arm_spent).
bool merge_next_event(Run& run, ibv_comp_channel* channel, ibv_cq* cq) {
  int provider_fd = -1;
  bool wrapped = false;
  {
    std::lock_guard lock(run.mutex);
    Tracked* tracked = run.registry.find(channel);
    if (tracked == nullptr) return false;
    wrapped = tracked->faults->events.wrapped();
    if (wrapped) {
      provider_fd = tracked->faults->events.provider_fd();
    } else {
      // The simulated device's channel is the application's own fd: an
      // event of another CQ read here could not be shown on it again, so
      // only a channel of this CQ alone waits.
      for (Tracked* other : run.registry.all(ObjectKind::cq))
        if (other->handle != cq && static_cast<const ibv_cq*>(other->handle)->channel == channel)
          return false;
      provider_fd = channel->fd;
    }
  }
  if (saved_ops(cq->context)->req_notify_cq(cq, 0) != 0) return false;
  // A real provider's event is read through a copy of the channel with the
  // provider's fd (libibverbs reads channel->fd only); the simulated
  // device's through the channel itself.
  ibv_comp_channel provider_channel = *channel;
  provider_channel.fd = provider_fd;
  ibv_comp_channel* reading = wrapped ? &provider_channel : channel;
  // At most a few events of other CQs before this one's: each is kept, and
  // the wait goes on for what is left of the window (about: each wait
  // takes the whole window when nothing comes).
  for (int kept = 0; kept < 8; ++kept) {
    if (!thread_calls::wait_readable_for(provider_fd, kCoalesceWindowNs, "ibv_get_cq_event",
                                         "a coalesced event's next completion"))
      break;
    ibv_cq* got = nullptr;
    void* context = nullptr;
    if (provider::get_cq_event(reading, &got, &context) != 0) continue;
    if (got == cq) {
      provider::ack_cq_events(cq, 1);
      return true;
    }
    std::lock_guard lock(run.mutex);
    if (Tracked* tracked = run.registry.find(channel)) {
      tracked->faults->kept_provider_events.push_back(got);
      tracked->faults->events.signal();
    }
  }
  std::lock_guard lock(run.mutex);
  if (Tracked* tracked = run.registry.find(cq)) tracked->faults->provider_arm_spent = true;
  return false;
}

// delayed_completion on the CQs of `channel`: the application waits for an
// event, so nothing else will happen before the held completions arrive;
// they become visible now and, as any completion does, raise an event when
// their CQ is armed. (Without this a correct application that drained,
// re-armed and slept would wait forever for completions the harness holds.)
// Those an empty poll released already (held_completions.h) arrived before
// the wait, and raise nothing now.
void release_held_completions(Run& run, ibv_comp_channel* channel) {
  std::vector<std::pair<ibv_cq*, bool>> to_notify;  // CQ, simulated
  {
    std::lock_guard lock(run.mutex);
    // Usually nothing is held: no list of CQs is built then.
    if (!run.engine.holds_completions()) return;
    for (Tracked* tracked : run.registry.all(ObjectKind::cq)) {
      auto* cq = static_cast<ibv_cq*>(const_cast<void*>(tracked->handle));
      if (cq->channel != channel || tracked->faults->held.empty() ||
          tracked->faults->held_polls == 0)
        continue;
      tracked->faults->held_polls = 0;
      run.record(record::CallRecord(tracked->id())
                       .add("held", tracked->faults->held.size())
                       .add("visible", "waiter"));
      if (tracked->simulated || tracked->faults->armed)
        to_notify.emplace_back(cq, tracked->simulated);
    }
  }
  // The simulated device fires only when the CQ is armed (provider::notify_cq).
  for (auto [cq, simulated] : to_notify)
    (void)inject::spurious_cq_event(run.engine, cq, simulated);
}

// Ends a thread's wait on a channel for the checks, however the wait ends.
class WaitEnd {
 public:
  WaitEnd(Run& run, const ibv_comp_channel* channel) : state_(run), channel_(channel) {}
  WaitEnd(const WaitEnd&) = delete;
  WaitEnd& operator=(const WaitEnd&) = delete;
  ~WaitEnd() {
    std::lock_guard lock(state_.mutex);
    if (const Tracked* tracked = state_.registry.find(channel_))
      state_.checkers.cq_event_wait_ended(*tracked);
  }

 private:
  Run& state_;
  const ibv_comp_channel* channel_;
};

}  // namespace

namespace {

// The channel whose fd is `fd`, when completions are held back on any CQ
// (lock held); nullptr otherwise.
ibv_comp_channel* channel_holding_for(Run& run, int fd) {
  if (!run.engine.holds_completions()) return nullptr;
  for (Tracked* tracked : run.registry.all(ObjectKind::channel)) {
    auto* channel = static_cast<ibv_comp_channel*>(const_cast<void*>(tracked->handle));
    if (channel->fd == fd) return channel;
  }
  return nullptr;
}

}  // namespace

// Whether a delayed_completion rule exists: without one nothing is ever
// held, and the waits below take no lock. (The scheduler asks with its
// own lock held, for every fd wait at every scheduling point, while the
// interposer's lock may be held for long by a poll that waits for another
// process in the simulated device.) The rules are fixed before the first
// verbs call, so reading them needs no lock.
bool may_hold(const Run& run) {
  return run.engine.has_rules(engine::Site::completion,
                                engine::FaultEngine::kind_bit(FaultKind::delayed_completion));
}

bool holds_for_waiter(Run& run, int fd) {
  if (!may_hold(run)) return false;
  std::lock_guard lock(run.mutex);
  const ibv_comp_channel* channel = channel_holding_for(run, fd);
  if (channel == nullptr) return false;
  for (Tracked* tracked : run.registry.all(ObjectKind::cq))
    if (static_cast<const ibv_cq*>(tracked->handle)->channel == channel &&
        !tracked->faults->held.empty() && tracked->faults->held_polls > 0)
      return true;
  return false;
}

void release_held_for_waiter(Run& run, int fd) {
  if (!may_hold(run)) return;
  ibv_comp_channel* channel = nullptr;
  {
    std::lock_guard lock(run.mutex);
    channel = channel_holding_for(run, fd);
  }
  if (channel != nullptr) release_held_completions(run, channel);
}

int calls::get_cq_event(Run& run, ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  bool injected = false;
  if (!run.active()) return next_wrapped_cq_event(run, channel, cq, cq_context, injected);
  for (;;) {
    release_held_completions(run, channel);
    ObjectRef waited_on{ObjectKind::channel, 0};
    {
      // What the application leaves behind when it waits; a wait nothing
      // can end is diagnosed here instead of hanging.
      std::lock_guard lock(run.mutex);
      if (const Tracked* tracked = run.registry.find(channel)) {
        waited_on = tracked->ref;
        run.checkers.before_cq_event_wait(run, *tracked);
        run.checkers.cq_event_wait_begins(*tracked);
      }
    }
    // The channel counts this thread among its waiters until the wait ends
    // (the checks' teardown window).
    const WaitEnd wait_end(run, channel);
    int got = 0;
    {
      // The hang watchdog sees the thread wait here (hang_watchdog.h).
      const hang::Blocked blocked("ibv_get_cq_event", waited_on);
      // Under the thread scheduler the wait is the scheduler's, so that the
      // other threads run meanwhile.
      const thread_calls::Readable readable =
          channel != nullptr ? thread_calls::wait_readable(channel->fd, "ibv_get_cq_event")
                             : thread_calls::Readable::ready;
      if (readable == thread_calls::Readable::held) continue;
      if (readable == thread_calls::Readable::interrupted) {
        errno = EINTR;  // as libibverbs' read(2) of the channel's fd fails
        got = -1;
      } else {
        got = next_wrapped_cq_event(run, channel, cq, cq_context, injected);
      }
    }
    if (got != 0) {
      const int error = errno;
      if (error == EAGAIN) hang::idle("ibv_get_cq_event", waited_on);
      const std::string name = errno_name(error);
      traced(run, channel, "get_cq_event", {{"ret", -1}, {"errno", name}});
      errno = error;
      return -1;
    }
    std::unique_lock lock(run.mutex);
    Tracked* tracked = run.registry.find(*cq);
    if (tracked == nullptr) return 0;
    if (injected && tracked->faults->armed) {
      tracked->faults->provider_arm_spent = true;
    } else if (!injected && tracked->faults->provider_arm_spent) {
      // The provider answers the arm an injected event answered already:
      // the application, which has not re-armed since, gets no event.
      tracked->faults->provider_arm_spent = false;
      run.record(record::CallRecord(tracked->id())
                       .add("event", "completion")
                       .add("absorbed", true)
                       .add("why", "not re-armed since an injected event"));
      lock.unlock();
      provider::ack_cq_events(*cq, 1);
      continue;
    }
    if (tracked->faults->absorb_next_event) {
      // coalesce_cq_event: this event is merged into the one delivered
      // before; the harness acknowledges it in the application's place.
      tracked->faults->absorb_next_event = false;
      run.record(
          record::CallRecord(tracked->id()).add("event", "completion").add("absorbed", true));
      lock.unlock();
      provider::ack_cq_events(*cq, 1);
      continue;
    }
    Opportunity at;
    at.site = Site::cq_event;
    at.object = tracked;
    auto decision =
        run.engine.decide(at, {FaultKind::drop_cq_event, FaultKind::coalesce_cq_event});
    if (decision && decision->rule->kind == FaultKind::drop_cq_event) {
      run.engine.record_fault(*tracked, *decision, "effect");
      lock.unlock();
      provider::ack_cq_events(*cq, 1);
      continue;  // the application waits for the next event, if any comes
    }
    if (decision && !injected) {
      // The event is made to stand for the next completion too, or, when
      // none comes soon, for the next event the application does not look
      // at the CQ before.
      const engine::Decision coalesced = *decision;
      lock.unlock();
      const bool merged = merge_next_event(run, channel, *cq);
      lock.lock();
      if ((tracked = run.registry.find(*cq)) == nullptr) return 0;
      run.engine.record_fault(*tracked, coalesced, "effect", {{"merged", merged ? 1 : 0}});
      tracked->faults->absorb_next_event = !merged;
    } else if (decision) {
      tracked->faults->absorb_next_event = true;
      run.engine.record_fault(*tracked, *decision, "effect");
    }
    hang::progressed();
    tracked->faults->armed = false;  // an event disarms its CQ
    run.record(record::CallRecord(tracked->id()).add("call", "get_cq_event").add("ret", 0));
    run.checkers.cq_event_taken(run, *tracked);
    return 0;
  }
}

void calls::ack_cq_events(Run& run, ibv_cq* cq, unsigned int nevents) {
  unsigned int provider_events = nevents;
  {
    // Injected events are acknowledged to the harness, not the provider
    // (whose destroy_cq waits for exactly its own count).
    std::lock_guard lock(run.mutex);
    if (Tracked* tracked = run.registry.find(cq)) {
      if (run.active()) run.checkers.cq_events_acked(run, *tracked, nevents);
      const unsigned int injected = std::min(nevents, tracked->faults->injected_cq_unacked);
      tracked->faults->injected_cq_unacked -= injected;
      provider_events -= injected;
    }
  }
  if (provider_events > 0) provider::ack_cq_events(cq, provider_events);
  traced(run, cq, "ack_cq_events", {{"n", nevents}});
}

}  // namespace verbfault::interposer

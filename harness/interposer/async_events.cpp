// ibv_get_async_event / ibv_ack_async_event through the interposer:
// injected events first on a real provider, the checks' view of the
// bookkeeping, and the records.
#include "async_event.h"
#include "calls.h"
#include "run.h"
#include "hang_watchdog.h"
#include "thread_calls.h"
#include "verbs.h"

#include <cerrno>

namespace verbfault::interposer {

namespace {

std::string element_name(Run& run, const ibv_async_event& event) {
  const void* element = record::element_of(event);
  if (element == nullptr) return "port " + std::to_string(event.element.port_num);
  if (Tracked* tracked = run.registry.find(element)) return tracked->name();
  return "unknown";
}

}  // namespace

namespace {

// The next async event of a context: injected first (real providers), else
// the provider's own.
int next_async_event(Run& run, ibv_context* context, ibv_async_event* event) {
  for (;;) {
    engine::EventFd fds;
    {
      std::unique_lock lock(run.mutex);
      Tracked* tracked = run.registry.find(context);
      if (tracked == nullptr || !tracked->faults->events.wrapped()) {
        lock.unlock();  // the provider may block
        return provider::get_async_event(context, event);
      }
      if (!tracked->faults->injected_async.empty()) {
        *event = tracked->faults->injected_async.front();
        tracked->faults->injected_async.pop_front();
        tracked->faults->events.consume();
        tracked->faults->injected_async_unacked.push_back(*event);
        return 0;
      }
      fds = tracked->faults->events;
    }
    int result = 0, error = 0;
    {
      // libibverbs reads context->async_fd: the provider's (non-blocking)
      // fd is lent back for the call.
      FdLoan provider_fd(run, context);
      result = provider::get_async_event(context, event);
      error = errno;
    }
    errno = error;
    if (result == 0 || error != EAGAIN || fds.nonblocking()) return result;
    fds.wait();
  }
}

}  // namespace

void calls::ack_async_event(Run& run, ibv_async_event* event) {
  {
    std::lock_guard lock(run.mutex);
    if (run.active())
      if (const void* element = record::element_of(*event))
        run.checkers.async_event_acked(run, run.registry.find(element));
    for (Tracked* context : run.registry.all(ObjectKind::context)) {
      auto& unacked = context->faults->injected_async_unacked;
      for (auto it = unacked.begin(); it != unacked.end(); ++it) {
        if (it->event_type != event->event_type || it->element.qp != event->element.qp) continue;
        unacked.erase(it);
        return;  // injected: nothing for the provider to count
      }
    }
  }
  provider::ack_async_event(event);
}

int calls::get_async_event(Run& run, ibv_context* context, ibv_async_event* event) {
  ObjectRef waited_on{ObjectKind::context, 0};
  if (run.active()) {
    std::lock_guard lock(run.mutex);
    if (const Tracked* tracked = run.registry.find(context)) {
      waited_on = tracked->ref;
      run.checkers.before_async_event_wait(run, *tracked);
    }
  }
  int result = 0;
  {
    // The hang watchdog sees the thread wait here (hang_watchdog.h).
    const hang::Blocked blocked("ibv_get_async_event", waited_on);
    // Under the thread scheduler the wait is the scheduler's.
    thread_calls::Readable readable = thread_calls::Readable::ready;
    if (context != nullptr)
      while ((readable = thread_calls::wait_readable(context->async_fd, "ibv_get_async_event")) ==
             thread_calls::Readable::held) {
      }
    if (readable == thread_calls::Readable::interrupted) {
      errno = EINTR;  // as libibverbs' read(2) of the async fd fails
      result = -1;
    } else {
      result = next_async_event(run, context, event);
    }
  }
  if (!run.active()) return result;
  const int error = errno;
  if (result == 0)
    hang::progressed();
  else if (error == EAGAIN)
    hang::idle("ibv_get_async_event", waited_on);
  std::lock_guard lock(run.mutex);
  if (Tracked* tracked = run.registry.find(context)) {
    record::CallRecord taken(tracked->id());
    taken.add("call", "get_async_event").add("ret", result);
    std::string text;
    if (result == 0) {
      text = element_name(run, *event);
      taken.add("event", to_string(event->event_type)).add("element", text);
      if (const void* element = record::element_of(*event))
        if (Tracked* element_record = run.registry.find(element))
          run.checkers.async_event_taken(*element_record);
    } else {
      text = errno_name(error);
      taken.add("errno", text);
    }
    run.record(taken);
  }
  errno = error;
  return result;
}

}  // namespace verbfault::interposer

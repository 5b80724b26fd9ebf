// The hooks of the exported calls: naming objects, call-site faults, the
// trace, and the event calls.
#include "injections.h"
#include "verbs.h"
#include "saved_ops.h"
#include "state.h"
#include "trampolines.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace verbfault::interposer {

namespace {

// The object a handle of `parent` kind belongs to: its context's name.
ObjectRef context_of(State& state, const void* parent) {
  if (Tracked* tracked = state.registry.find(parent)) return tracked->context;
  return {ObjectKind::context, 0};
}

ibv_context* context_handle(State& state, ObjectRef context) {
  for (Tracked* tracked : state.registry.all(ObjectKind::context))
    if (tracked->ref == context)
      return static_cast<ibv_context*>(const_cast<void*>(tracked->handle));
  return nullptr;
}

void report_unsupported(const Rule& rule, std::uint32_t index, const Tracked& object) {
  std::fprintf(stderr,
               "verbfault: rule #%u (%s) fired on %s but cannot be injected on this provider; "
               "the fault was not injected\n",
               index, to_cli(rule).c_str(), object.name().c_str());
}

}  // namespace

bool active() {
  return g_active;
}

void wrap_fd(State& state, Tracked& tracked, int& fd) {
  const int wrapped = state.engine.faults(tracked).events.wrap(fd);
  if (wrapped >= 0) {
    fd = wrapped;
  } else {
    std::fprintf(stderr,
                 "verbfault: cannot wrap the event fd of %s (%s): no injected events on it\n",
                 tracked.name().c_str(), std::strerror(errno));
  }
}

void unwrap_fd(const void* handle) {
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  Tracked* tracked = state.registry.find(handle);
  if (tracked == nullptr || !state.engine.faults(*tracked).events.wrapped()) return;
  const int provider_fd = state.engine.faults(*tracked).events.unwrap();
  if (tracked->ref.kind == ObjectKind::context)
    static_cast<ibv_context*>(const_cast<void*>(handle))->async_fd = provider_fd;
  else
    static_cast<ibv_comp_channel*>(const_cast<void*>(handle))->fd = provider_fd;
}

FdLoan::FdLoan(ibv_comp_channel* channel) {
  if (channel != nullptr) lend(channel, &channel->fd);
}

FdLoan::FdLoan(ibv_context* context) {
  if (context != nullptr) lend(context, &context->async_fd);
}

void FdLoan::lend(const void* handle, int* fd) {
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  Tracked* tracked = state.registry.find(handle);
  if (tracked == nullptr || !state.engine.faults(*tracked).events.wrapped()) return;
  handle_ = handle;
  fd_ = fd;
  if (tracked->fd_loans++ == 0) *fd = state.engine.faults(*tracked).events.provider_fd();
}

FdLoan::~FdLoan() {
  if (handle_ == nullptr) return;
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  Tracked* tracked = state.registry.find(handle_);
  if (tracked != nullptr && --tracked->fd_loans == 0)
    *fd_ = state.engine.faults(*tracked).events.application_fd();
}

void opened(ibv_context* context, const char* device_name) {
  State& state = State::get();
  const bool simulated = provider::simulated(context);
  {
    std::lock_guard lock(state.mutex);
    Tracked& tracked = state.add_object(ObjectKind::context, context, {}, simulated);
    if (!simulated) wrap_fd(state, tracked, context->async_fd);
    if (g_active)
      state.record(record::CallRecord(tracked.id())
                       .add("call", "open_device")
                       .add("device", device_name)
                       .add("provider", simulated ? "simulated" : "real"));
  }
  if (!save_ops(context)) {
    std::fprintf(stderr, "verbfault: too many open contexts to interpose on; %s is not wrapped\n",
                 device_name);
    return;
  }
  install_trampolines(context);
}

void adjust_port_attr(const ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  (void)port;  // the emulated condition is per context (its one port)
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  Tracked* tracked = state.registry.find(context);
  if (tracked != nullptr && state.engine.faults(*tracked).port_down) attr->state = IBV_PORT_DOWN;
}

void closing(ibv_context* context, int result) {
  if (result == 0) {
    forget_ops(context);
    // What the application left open goes with the context (the simulated
    // device frees it; a real provider leaks it): forgotten here, so that
    // no later object at the same address inherits its name.
    State& state = State::get();
    std::lock_guard lock(state.mutex);
    std::vector<const void*> children;
    std::string names;
    for (ObjectKind kind : {ObjectKind::qp, ObjectKind::srq, ObjectKind::cq, ObjectKind::ah,
                            ObjectKind::mr, ObjectKind::pd, ObjectKind::channel})
      for (Tracked* object : state.registry.all(kind))
        if (object->context_handle == context) {
          children.push_back(object->handle);
          names += (names.empty() ? "" : ", ") + object->name();
        }
    if (g_active && !children.empty())
      if (Tracked* tracked = state.registry.find(context))
        state.checkers.closed_with_children(state, *tracked, names);
    for (const void* child : children) state.remove_object(*state.registry.find(child));
  }
  destroyed(context, "close_device", result);
}

int call_site_faults(State& state, std::unique_lock<std::mutex>& lock, Tracked*& tracked,
                     std::optional<Verb> verb, OnDeadDevice on_dead) {
  // After an injected DEVICE_FATAL on a real provider, verbs fail with EIO
  // (the simulated device does this itself).
  if (!tracked->simulated && on_dead == OnDeadDevice::fail)
    if (Tracked* context = state.registry.context_of(*tracked);
        context && state.engine.faults(*context).dead)
      return EIO;
  if (!state.engine.has_rules(Site::call)) return 0;
  Opportunity at;
  at.site = Site::call;
  at.object = tracked;
  at.qp = tracked->ref.kind == ObjectKind::qp ? tracked : nullptr;
  at.verb = verb;
  auto decision = state.engine.decide(at, {FaultKind::verb_failure, FaultKind::async_event,
                                           FaultKind::port_down, FaultKind::device_fatal});
  if (!decision) return 0;
  const Rule& rule = *decision->rule;
  if (rule.kind == FaultKind::verb_failure) {
    const std::string error = errno_name(*rule.error);
    state.engine.record_fault(*tracked, *decision, "effect",
                              {{"verb", to_string(*rule.verb)}, {"errno", error}});
    return *rule.error;
  }
  const void* object = tracked->handle;
  inject::Target target{object, context_handle(state, tracked->context), tracked->simulated};
  const Tracked snapshot = *tracked;
  lock.unlock();
  inject::Level level = inject::Level::unsupported;
  const std::uint8_t port = rule.port.value_or(1);
  switch (rule.kind) {
    case FaultKind::async_event:
      level = inject::async_event(state.engine, target, *rule.event, port);
      break;
    case FaultKind::port_down:
      level = inject::port_down(state.engine, target, port);
      break;
    case FaultKind::device_fatal:
      level = inject::device_fatal(state.engine, target);
      break;
    default:
      break;
  }
  if (level == inject::Level::unsupported) report_unsupported(rule, decision->rule_index, snapshot);
  lock.lock();
  tracked = state.registry.find(object);
  if (tracked != nullptr) {
    if (rule.event)
      state.engine.record_fault(*tracked, *decision, inject::to_string(level),
                                {{"event", to_string(*rule.event)}});
    else
      state.engine.record_fault(*tracked, *decision, inject::to_string(level));
  }
  return 0;
}

int before_call(std::optional<Verb> verb, const void* object, OnDeadDevice on_dead) {
  if (!g_active) return 0;
  State& state = State::get();
  std::unique_lock lock(state.mutex);
  Tracked* tracked = state.registry.find(object);
  if (tracked == nullptr) return 0;
  return call_site_faults(state, lock, tracked, verb, on_dead);
}

void created(ObjectKind kind, const void* handle, const void* parent, std::string_view call,
             Fields args) {
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  const bool simulated = [&] {
    if (Tracked* p = state.registry.find(parent)) return p->simulated;
    return false;
  }();
  // Already named (a create the real library made through another export
  // of ours): one object, one name.
  if (state.registry.find(handle) != nullptr) return;
  Tracked& tracked = state.add_object(kind, handle, context_of(state, parent), simulated);
  if (kind == ObjectKind::channel && !simulated)
    wrap_fd(state, tracked, static_cast<ibv_comp_channel*>(const_cast<void*>(handle))->fd);
  if (!g_active) return;
  if (kind == ObjectKind::qp) {
    auto arg = [&](std::string_view key) -> std::uint64_t {
      for (const record::Field& field : args)
        if (field.key == key) return field.value.unsigned_integer;
      return 0;
    };
    state.checkers.qp_created(state, tracked, static_cast<std::uint32_t>(arg("max_send_wr")),
                              static_cast<std::uint32_t>(arg("max_recv_wr")),
                              arg("sq_sig_all") != 0);
  }
  record::CallRecord created(tracked.id());
  created.add("call", call);
  if (Tracked* p = state.registry.find(parent)) created.add("parent", p->ref);
  for (const record::Field& field : args) created.add(field.key, field.value);
  state.record(created.add("ret", "ok"));
}

void create_failed(const void* parent, std::string_view call, Fields args, int error) {
  if (!g_active) return;
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  Tracked* p = state.registry.find(parent);
  if (p == nullptr) return;
  record::CallRecord failed(p->id());
  failed.add("call", call);
  for (const record::Field& field : args) failed.add(field.key, field.value);
  const std::string name = errno_name(error);
  state.record(failed.add("ret", "error").add("errno", name));
}

void destroyed(const void* handle, std::string_view call, int result) {
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  Tracked* tracked = state.registry.find(handle);
  if (tracked == nullptr) return;
  if (g_active)
    state.record(record::CallRecord(tracked->id()).add("call", call).add("ret", result));
  if (result != 0 && g_active) state.checkers.destroy_refused(state, *tracked, result);
  if (result == 0) {
    state.remove_object(*tracked);
  } else if (!tracked->simulated && !state.engine.faults(*tracked).events.wrapped()) {
    // Still alive after all: its fd is wrapped again.
    if (tracked->ref.kind == ObjectKind::channel)
      wrap_fd(state, *tracked, static_cast<ibv_comp_channel*>(const_cast<void*>(handle))->fd);
    if (tracked->ref.kind == ObjectKind::context)
      wrap_fd(state, *tracked, static_cast<ibv_context*>(const_cast<void*>(handle))->async_fd);
  }
}

void destroying(const void* handle) {
  if (!g_active) return;
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  if (Tracked* tracked = state.registry.find(handle)) state.checkers.destroying(state, *tracked);
}

void qp_modified(ibv_qp* qp, const ibv_qp_attr& attr, int mask) {
  if (!g_active) return;
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  if (Tracked* tracked = state.registry.find(qp)) state.checkers.qp_modified(*tracked, attr, mask);
}

void traced(const void* object, std::string_view call, Fields fields) {
  if (!g_active) return;
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  Tracked* tracked = state.registry.find(object);
  if (tracked == nullptr) return;
  record::CallRecord line(tracked->id());
  line.add("call", call);
  for (const record::Field& field : fields) line.add(field.key, field.value);
  state.record(line);
}

// ---- completion events ---------------------------------------------------------

namespace {

// A completion event from a wrapped (real provider) channel: an injected
// one first, else the provider's own through its fd; waits on the
// application's fd unless it is non-blocking.
int next_wrapped_cq_event(State& state, ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  for (;;) {
    engine::EventFd fds;
    {
      std::unique_lock lock(state.mutex);
      Tracked* tracked = state.registry.find(channel);
      if (tracked == nullptr || !state.engine.faults(*tracked).events.wrapped()) {
        lock.unlock();  // the provider may block
        return provider::get_cq_event(channel, cq, cq_context);
      }
      if (!state.engine.faults(*tracked).injected_cq_events.empty()) {
        *cq = state.engine.faults(*tracked).injected_cq_events.front();
        state.engine.faults(*tracked).injected_cq_events.pop_front();
        state.engine.faults(*tracked).events.consume();
        *cq_context = (*cq)->cq_context;
        if (Tracked* target = state.registry.find(*cq))
          ++state.engine.faults(*target).injected_cq_unacked;
        return 0;
      }
      fds = state.engine.faults(*tracked).events;
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

// delayed_completion on the CQs of `channel`: the application waits for an
// event, so nothing else will happen before the held completions arrive;
// they become visible now and, as any completion does, raise an event when
// their CQ is armed. (Without this a correct application that drained,
// re-armed and slept would wait forever for completions the harness holds.)
void release_held_completions(State& state, ibv_comp_channel* channel) {
  std::vector<std::pair<ibv_cq*, bool>> to_notify;  // CQ, simulated
  {
    std::lock_guard lock(state.mutex);
    for (Tracked* tracked : state.registry.all(ObjectKind::cq)) {
      auto* cq = static_cast<ibv_cq*>(const_cast<void*>(tracked->handle));
      if (cq->channel != channel || state.engine.faults(*tracked).held.empty()) continue;
      state.engine.faults(*tracked).held_polls = 0;
      state.record(record::CallRecord(tracked->id())
                       .add("held", state.engine.faults(*tracked).held.size())
                       .add("visible", "waiter"));
      if (tracked->simulated || state.engine.faults(*tracked).armed)
        to_notify.emplace_back(cq, tracked->simulated);
    }
  }
  // The simulated device fires only when the CQ is armed (provider::notify_cq).
  for (auto [cq, simulated] : to_notify)
    (void)inject::spurious_cq_event(state.engine, cq, simulated);
}

}  // namespace

int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (!g_active) return next_wrapped_cq_event(State::get(), channel, cq, cq_context);
  State& state = State::get();
  release_held_completions(state, channel);
  for (;;) {
    {
      // What the application leaves behind when it waits; a wait nothing
      // can end is diagnosed here instead of hanging.
      std::lock_guard lock(state.mutex);
      if (const Tracked* tracked = state.registry.find(channel))
        state.checkers.before_cq_event_wait(state, *tracked);
    }
    if (next_wrapped_cq_event(state, channel, cq, cq_context) != 0) {
      const int error = errno;
      const std::string name = errno_name(error);
      traced(channel, "get_cq_event", {{"ret", -1}, {"errno", name}});
      errno = error;
      return -1;
    }
    std::unique_lock lock(state.mutex);
    Tracked* tracked = state.registry.find(*cq);
    if (tracked == nullptr) return 0;
    if (state.engine.faults(*tracked).absorb_next_event) {
      // coalesce_cq_event: this event is merged into the one delivered
      // before; the harness acknowledges it in the application's place.
      state.engine.faults(*tracked).absorb_next_event = false;
      state.record(
          record::CallRecord(tracked->id()).add("event", "completion").add("absorbed", true));
      lock.unlock();
      provider::ack_cq_events(*cq, 1);
      continue;
    }
    Opportunity at;
    at.site = Site::cq_event;
    at.object = tracked;
    auto decision =
        state.engine.decide(at, {FaultKind::drop_cq_event, FaultKind::coalesce_cq_event});
    if (decision && decision->rule->kind == FaultKind::drop_cq_event) {
      state.engine.record_fault(*tracked, *decision, "effect");
      lock.unlock();
      provider::ack_cq_events(*cq, 1);
      continue;  // the application waits for the next event, if any comes
    }
    if (decision) {
      state.engine.faults(*tracked).absorb_next_event = true;
      state.engine.record_fault(*tracked, *decision, "effect");
    }
    state.engine.faults(*tracked).armed = false;  // an event disarms its CQ
    state.record(record::CallRecord(tracked->id()).add("call", "get_cq_event").add("ret", 0));
    state.checkers.cq_event_taken(*tracked);
    return 0;
  }
}

void ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  unsigned int provider_events = nevents;
  {
    // Injected events are acknowledged to the harness, not the provider
    // (whose destroy_cq waits for exactly its own count).
    State& state = State::get();
    std::lock_guard lock(state.mutex);
    if (Tracked* tracked = state.registry.find(cq)) {
      if (g_active) state.checkers.cq_events_acked(state, *tracked, nevents);
      const unsigned int injected =
          std::min(nevents, state.engine.faults(*tracked).injected_cq_unacked);
      state.engine.faults(*tracked).injected_cq_unacked -= injected;
      provider_events -= injected;
    }
  }
  if (provider_events > 0) provider::ack_cq_events(cq, provider_events);
  traced(cq, "ack_cq_events", {{"n", nevents}});
}

// ---- asynchronous events ------------------------------------------------------

namespace {

// The QP, SRQ or CQ an affiliated event is about (nullptr: a port or
// device event).
const void* element_of(const ibv_async_event& event) {
  switch (inject::element_kind(event.event_type)) {
    case ObjectKind::qp:
      return event.element.qp;
    case ObjectKind::srq:
      return event.element.srq;
    case ObjectKind::cq:
      return event.element.cq;
    default:
      return nullptr;
  }
}

std::string element_name(State& state, const ibv_async_event& event) {
  const void* element = element_of(event);
  if (element == nullptr) return "port " + std::to_string(event.element.port_num);
  if (Tracked* tracked = state.registry.find(element)) return tracked->name();
  return "unknown";
}

}  // namespace

namespace {

// The next async event of a context: injected first (real providers), else
// the provider's own.
int next_async_event(State& state, ibv_context* context, ibv_async_event* event) {
  for (;;) {
    engine::EventFd fds;
    {
      std::unique_lock lock(state.mutex);
      Tracked* tracked = state.registry.find(context);
      if (tracked == nullptr || !state.engine.faults(*tracked).events.wrapped()) {
        lock.unlock();  // the provider may block
        return provider::get_async_event(context, event);
      }
      if (!state.engine.faults(*tracked).injected_async.empty()) {
        *event = state.engine.faults(*tracked).injected_async.front();
        state.engine.faults(*tracked).injected_async.pop_front();
        state.engine.faults(*tracked).events.consume();
        state.engine.faults(*tracked).injected_async_unacked.push_back(*event);
        return 0;
      }
      fds = state.engine.faults(*tracked).events;
    }
    int result = 0, error = 0;
    {
      // libibverbs reads context->async_fd: the provider's (non-blocking)
      // fd is lent back for the call.
      FdLoan provider_fd(context);
      result = provider::get_async_event(context, event);
      error = errno;
    }
    errno = error;
    if (result == 0 || error != EAGAIN || fds.nonblocking()) return result;
    fds.wait();
  }
}

}  // namespace

void ack_async_event(ibv_async_event* event) {
  State& state = State::get();
  {
    std::lock_guard lock(state.mutex);
    if (g_active)
      if (const void* element = element_of(*event))
        state.checkers.async_event_acked(state, state.registry.find(element));
    for (Tracked* context : state.registry.all(ObjectKind::context)) {
      auto& unacked = state.engine.faults(*context).injected_async_unacked;
      for (auto it = unacked.begin(); it != unacked.end(); ++it) {
        if (it->event_type != event->event_type || it->element.qp != event->element.qp) continue;
        unacked.erase(it);
        return;  // injected: nothing for the provider to count
      }
    }
  }
  provider::ack_async_event(event);
}

int get_async_event(ibv_context* context, ibv_async_event* event) {
  State& state0 = State::get();
  if (g_active) {
    std::lock_guard lock(state0.mutex);
    if (const Tracked* tracked = state0.registry.find(context))
      state0.checkers.before_async_event_wait(state0, *tracked);
  }
  const int result = next_async_event(state0, context, event);
  if (!g_active) return result;
  const int error = errno;
  State& state = State::get();
  std::lock_guard lock(state.mutex);
  if (Tracked* tracked = state.registry.find(context)) {
    record::CallRecord taken(tracked->id());
    taken.add("call", "get_async_event").add("ret", result);
    std::string text;
    if (result == 0) {
      text = element_name(state, *event);
      taken.add("event", to_string(event->event_type)).add("element", text);
      if (const void* element = element_of(*event))
        if (Tracked* element_record = state.registry.find(element))
          state.checkers.async_event_taken(*element_record);
    } else {
      text = errno_name(error);
      taken.add("errno", text);
    }
    state.record(taken);
  }
  errno = error;
  return result;
}

}  // namespace verbfault::interposer

// The call-site faults (async_event, port_down, device_fatal,
// verb_failure) of every call on an object, and what a real provider's
// port looks like after the engine took it down.
#include "run.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace verbfault::interposer {

namespace {

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

void adjust_port_attr(Run& run, const ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  (void)port;  // the emulated condition is per context (its one port)
  std::lock_guard lock(run.mutex);
  Tracked* tracked = run.registry.find(context);
  if (tracked != nullptr && tracked->faults->port_down) attr->state = IBV_PORT_DOWN;
}

int call_site_faults(Run& run, std::unique_lock<record::RunLock>& lock, Tracked*& tracked,
                     std::optional<Verb> verb, OnDeadDevice on_dead) {
  // After an injected DEVICE_FATAL on a real provider, verbs fail with EIO
  // (the simulated device does this itself).
  if (!tracked->simulated && on_dead == OnDeadDevice::fail)
    if (const engine::ObjectFaults* context = run.engine.context_faults(*tracked);
        context && context->dead)
      return EIO;
  if (!run.engine.has_rules(Site::call)) return 0;
  Opportunity at;
  at.site = Site::call;
  at.object = tracked;
  at.qp = tracked->ref.kind == ObjectKind::qp ? tracked : nullptr;
  at.verb = verb;
  auto decision = run.engine.decide(at, {FaultKind::verb_failure, FaultKind::async_event,
                                           FaultKind::port_down, FaultKind::device_fatal});
  if (!decision) return 0;
  const Rule& rule = *decision->rule;
  if (rule.kind == FaultKind::verb_failure) {
    const std::string error = errno_name(*rule.error);
    run.engine.record_fault(*tracked, *decision, "effect",
                              {{"verb", to_string(*rule.verb)}, {"errno", error}});
    return *rule.error;
  }
  const void* object = tracked->handle;
  inject::Target target{object,
                        static_cast<ibv_context*>(const_cast<void*>(tracked->context_handle)),
                        tracked->simulated};
  const Tracked snapshot = *tracked;
  lock.unlock();
  inject::Level level = inject::Level::unsupported;
  const std::uint8_t port = rule.port.value_or(1);
  switch (rule.kind) {
    case FaultKind::async_event:
      level = inject::async_event(run.engine, target, *rule.event, port);
      break;
    case FaultKind::port_down:
      level = inject::port_down(run.engine, target, port);
      break;
    case FaultKind::device_fatal:
      level = inject::device_fatal(run.engine, target);
      break;
    default:
      break;
  }
  // The simulated device takes every port_down of a port it has: one it
  // refuses names a port that does not exist there, a mistake in the plan
  // only the opened device could show. One line and the configuration's
  // exit status, not a warning each time the rule fires.
  if (level == inject::Level::unsupported && target.simulated &&
      rule.kind == FaultKind::port_down) {
    std::fprintf(stderr,
                 "verbfault: rule #%u (%s): the simulated device of %s has no port %u: "
                 "expected port=1\n",
                 decision->rule_index, to_cli(rule).c_str(), snapshot.name().c_str(),
                 static_cast<unsigned>(port));
    std::fflush(nullptr);
    std::_Exit(exit_status::kUsage);
  }
  if (level == inject::Level::unsupported) report_unsupported(rule, decision->rule_index, snapshot);
  lock.lock();
  tracked = run.registry.find(object);
  if (tracked != nullptr) {
    if (rule.event)
      run.engine.record_fault(*tracked, *decision, inject::to_string(level),
                                {{"event", to_string(*rule.event)}});
    else
      run.engine.record_fault(*tracked, *decision, inject::to_string(level));
  }
  return 0;
}

int before_call(Run& run, std::optional<Verb> verb, const void* object, OnDeadDevice on_dead) {
  if (!run.active()) return 0;
  std::unique_lock lock(run.mutex);
  Tracked* tracked = run.registry.find(object);
  if (tracked == nullptr) return 0;
  return call_site_faults(run, lock, tracked, verb, on_dead);
}

}  // namespace verbfault::interposer

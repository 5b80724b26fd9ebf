// Naming and lifetime: every object the front door hands out gets its
// stable name ("qp#3") when it is created, is traced with its calls, and is
// forgotten by the registry, the engine and the checks when destroyed.
#include "run.h"
#include "callers.h"
#include "hang_watchdog.h"
#include "saved_ops.h"
#include "trampolines.h"
#include "verbs.h"

#include <cstdio>

namespace verbfault::interposer {

namespace {

ObjectRef context_of(Run& run, const void* parent) {
  if (Tracked* tracked = run.registry.find(parent)) return tracked->context;
  return {ObjectKind::context, 0};
}

// Once per process, at the first real device opened: which checks are off
// there, and why (lock held).
void say_checks_off(Run& run, const char* device_name) {
  static bool said = false;
  if (said) return;
  said = true;
  const std::string off = run.checkers.needing_simulated_device();
  if (off.empty()) return;
  const bool hangs = run.checkers.enabled("liveness.hang") && run.config.hang_after_ns != 0;
  char hang_after[32];
  std::snprintf(hang_after, sizeof hang_after, "%g s",
                static_cast<double>(run.config.hang_after_ns) / 1e9);
  std::fprintf(stderr,
               "verbfault: checks off on %s, a real provider: %s (they need the simulated "
               "device's view: what a CQ holds, what is due on its clock); %s\n",
               device_name, off.c_str(),
               hangs ? ("hangs are judged by time instead (liveness.hang after " +
                        std::string(hang_after) + " without progress, --hang-after)")
                           .c_str()
                     : "liveness.hang is off too: a hang is left to --timeout");
}

}  // namespace

void opened(Run& run, ibv_context* context, const char* device_name) {
  const bool simulated = provider::simulated(context);
  {
    std::lock_guard lock(run.mutex);
    Tracked& tracked = run.add_object(ObjectKind::context, context, {}, simulated);
    if (!simulated) wrap_fd(tracked, context->async_fd);
    if (run.active())
      run.record(record::CallRecord(tracked.id())
                       .add("call", "open_device")
                       .add("device", device_name)
                       .add("provider", simulated ? "simulated" : "real"));
    if (run.active() && !simulated) say_checks_off(run, device_name);
  }
  if (!save_ops(context)) {
    std::fprintf(stderr, "verbfault: too many open contexts to interpose on; %s is not wrapped\n",
                 device_name);
    return;
  }
  // Without a configuration the context keeps the provider's own fast
  // paths (nothing between the application and the provider); a Session
  // that switches the harness on installs the trampolines then.
  if (run.active()) install_trampolines(context);
}

void closing(Run& run, ibv_context* context, int result) {
  if (result == 0) {
    forget_ops(context);
    // What the application left open goes with the context (the simulated
    // device frees it; a real provider leaks it): forgotten here, so that
    // no later object at the same address inherits its name.
    std::lock_guard lock(run.mutex);
    std::vector<const void*> children;
    std::string names;
    for (ObjectKind kind : {ObjectKind::qp, ObjectKind::srq, ObjectKind::cq, ObjectKind::ah,
                            ObjectKind::mr, ObjectKind::pd, ObjectKind::channel})
      for (Tracked* object : run.registry.all(kind))
        if (object->context_handle == context) {
          children.push_back(object->handle);
          names += (names.empty() ? "" : ", ") + object->name();
        }
    if (run.active() && !children.empty())
      if (Tracked* tracked = run.registry.find(context))
        run.checkers.closed_with_children(run, *tracked, names);
    for (const void* child : children) run.remove_object(*run.registry.find(child));
  }
  destroyed(run, context, "close_device", result);
}

void created(Run& run, ObjectKind kind, const void* handle, const void* parent, std::string_view call,
             Fields args) {
  std::lock_guard lock(run.mutex);
  const bool simulated = [&] {
    if (Tracked* p = run.registry.find(parent)) return p->simulated;
    return false;
  }();
  // Already named (a create the real library made through another export
  // of ours): one object, one name.
  if (run.registry.find(handle) != nullptr) return;
  Tracked& tracked = run.add_object(kind, handle, context_of(run, parent), simulated);
  if (kind == ObjectKind::channel && !simulated)
    wrap_fd(tracked, static_cast<ibv_comp_channel*>(const_cast<void*>(handle))->fd);
  if (!run.active()) return;
  if (kind == ObjectKind::qp) {
    auto arg = [&](std::string_view key) -> std::uint64_t {
      for (const record::Field& field : args)
        if (field.key == key) return field.value.unsigned_integer;
      return 0;
    };
    run.checkers.qp_created(run, tracked, static_cast<std::uint32_t>(arg("max_send_wr")),
                              static_cast<std::uint32_t>(arg("max_recv_wr")),
                              arg("sq_sig_all") != 0);
  }
  record::CallRecord created(tracked.id());
  created.add("call", call);
  if (Tracked* p = run.registry.find(parent)) created.add("parent", p->ref);
  for (const record::Field& field : args) created.add(field.key, field.value);
  run.record(created.add("ret", "ok"));
}

void sge_limits(Run& run, const void* handle, std::uint32_t max_send_sge, std::uint32_t max_recv_sge) {
  std::lock_guard lock(run.mutex);
  if (Tracked* tracked = run.registry.find(handle)) {
    tracked->max_send_sge = max_send_sge;
    tracked->max_recv_sge = max_recv_sge;
  }
}

void kept_by_library(Run& run, const void* handle, const void* caller) {
  if (handle == nullptr || !called_from_connection_manager(caller)) return;
  std::lock_guard lock(run.mutex);
  if (Tracked* tracked = run.registry.find(handle)) tracked->kept_by_library = true;
}

void create_failed(Run& run, const void* parent, std::string_view call, Fields args, int error) {
  if (!run.active()) return;
  std::lock_guard lock(run.mutex);
  Tracked* p = run.registry.find(parent);
  if (p == nullptr) return;
  record::CallRecord failed(p->id());
  failed.add("call", call);
  for (const record::Field& field : args) failed.add(field.key, field.value);
  const std::string name = errno_name(error);
  run.record(failed.add("ret", "error").add("errno", name));
}

void destroyed(Run& run, const void* handle, std::string_view call, int result) {
  std::lock_guard lock(run.mutex);
  Tracked* tracked = run.registry.find(handle);
  if (tracked == nullptr) return;
  if (run.active())
    run.record(record::CallRecord(tracked->id()).add("call", call).add("ret", result));
  if (result != 0 && run.active()) run.checkers.destroy_refused(run, *tracked, result);
  if (result == 0) {
    run.remove_object(*tracked);
  } else if (!tracked->simulated && !tracked->faults->events.wrapped()) {
    // Still alive after all: its fd is wrapped again.
    if (tracked->ref.kind == ObjectKind::channel)
      wrap_fd(*tracked, static_cast<ibv_comp_channel*>(const_cast<void*>(handle))->fd);
    if (tracked->ref.kind == ObjectKind::context)
      wrap_fd(*tracked, static_cast<ibv_context*>(const_cast<void*>(handle))->async_fd);
  }
}

void destroying(Run& run, const void* handle) {
  if (!run.active()) return;
  std::lock_guard lock(run.mutex);
  if (Tracked* tracked = run.registry.find(handle)) run.checkers.destroying(run, *tracked);
}

void joining(Run& run) {
  if (!run.active()) return;
  std::lock_guard lock(run.mutex);
  run.checkers.joining(run);
}

void qp_modified(Run& run, ibv_qp* qp, const ibv_qp_attr& attr, int mask) {
  if (!run.active()) return;
  hang::progressed();
  std::lock_guard lock(run.mutex);
  if (Tracked* tracked = run.registry.find(qp)) run.checkers.qp_modified(*tracked, attr, mask);
}

void traced(Run& run, const void* object, std::string_view call, Fields fields) {
  if (!run.active()) return;
  std::lock_guard lock(run.mutex);
  Tracked* tracked = run.registry.find(object);
  if (tracked == nullptr) return;
  record::CallRecord line(tracked->id());
  line.add("call", call);
  for (const record::Field& field : fields) line.add(field.key, field.value);
  run.record(line);
}

}  // namespace verbfault::interposer

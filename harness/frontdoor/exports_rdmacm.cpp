// Exported functions of librdmacm (their table: rdmacm_table.h) that the
// harness watches around: each calls librdmacm's own (the next definition,
// RTLD_NEXT) and tells the interposer what it did (interposer/cm_events.h:
// which events the program holds). The calls on an id, a channel or an
// event refuse a NULL one with EINVAL, the errno librdmacm's man pages
// give for an invalid argument, where librdmacm itself would dereference
// it and crash; so are a connect and an accept on an id without a device. librdmacm calls them from
// within itself through its PLT too (rsockets, rdma_destroy_ep, the synchronous ids), so its own
// events are counted as the program's. A program that never loads librdmacm never calls them.
#include "cm_events.h"
#include "rdmacm_table.h"
#include "verb_table.h"

#include <dlfcn.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <cerrno>

using namespace verbfault::interposer;

namespace {

// librdmacm's definition of `name`: the next one in the global scope, or,
// when librdmacm was loaded in a local scope (UCX's uct_rdmacm module is
// dlopen'ed with RTLD_LOCAL, librdmacm with it), the loaded library's own.
void* lookup(const char* name) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  void* library = dlopen("librdmacm.so.1", RTLD_LAZY | RTLD_NOLOAD);
  return library == nullptr ? nullptr : dlsym(library, name);
}

// Looked up at the first call (librdmacm is loaded by then: the caller is
// in it, or linked to it).
template <class Function>
Function* next(const char* name) {
  return reinterpret_cast<Function*>(lookup(name));
}

int invalid() {
  errno = EINVAL;
  return -1;
}

// librdmacm's `name`, cached in `cache` once found (relaxed: every thread
// that looks finds the same address); nullptr while librdmacm is not
// loaded, looked for again at the next call.
template <class Function>
Function* resolved(std::atomic<Function*>& cache, const char* name) {
  Function* found = cache.load(std::memory_order_relaxed);
  if (found == nullptr) {
    found = next<Function>(name);
    cache.store(found, std::memory_order_relaxed);
  }
  return found;
}

// librdmacm's `name` called with `id` and the rest, NULL id refused.
template <class... Args>
int on_id(const char* name, std::atomic<int (*)(rdma_cm_id*, Args...)>& cache, rdma_cm_id* id,
          Args... args) {
  if (id == nullptr) return invalid();
  auto* real = resolved(cache, name);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(id, args...);
}

}  // namespace

// The rows of the librdmacm table (rdmacm_table.h) with a guard: each
// caches librdmacm's definition in a static of its own.
#define VERBFAULT_RDMACM_GUARD_ID(params, args)
#define VERBFAULT_RDMACM_GUARD_ID_DEVICE(params, args) \
  if (id != nullptr && id->verbs == nullptr) return invalid();
#define VERBFAULT_RDMACM_FORWARD_ID(name, params, args, guard) \
  int name params {                                            \
    static std::atomic<int(*) params> real{nullptr};           \
    VERBFAULT_RDMACM_GUARD_##guard(params, args)               \
    return on_id(#name, real, VERBFAULT_UNPAREN args);         \
  }
#define VERBFAULT_RDMACM_FORWARD_ID_DEVICE VERBFAULT_RDMACM_FORWARD_ID
#define VERBFAULT_RDMACM_FORWARD_CUSTOM(name, params, args, guard)
#define VERBFAULT_RDMACM_FORWARD(name, version, params, args, guard) \
  VERBFAULT_RDMACM_FORWARD_##guard(name, params, args, guard)

extern "C" {

VERBFAULT_RDMACM_CALLS(VERBFAULT_RDMACM_FORWARD)

// The CUSTOM rows.
int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  static std::atomic<int (*)(rdma_event_channel*, rdma_cm_event**)> cache{nullptr};
  if (channel == nullptr || event == nullptr) return invalid();
  auto* real = resolved(cache, "rdma_get_cm_event");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int result = real(channel, event);
  if (result == 0 && event != nullptr) cm_events::got(process_run(), *event);
  return result;
}

int rdma_ack_cm_event(rdma_cm_event* event) {
  static std::atomic<int (*)(rdma_cm_event*)> cache{nullptr};
  if (event == nullptr) return invalid();
  auto* real = resolved(cache, "rdma_ack_cm_event");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // Before: the ack frees the event. One acknowledged already is not
  // freed twice (cm.event_acked_twice).
  if (!cm_events::acked(process_run(), event)) {
    errno = EINVAL;
    return -1;
  }
  return real(event);
}

int rdma_destroy_id(rdma_cm_id* id) {
  static std::atomic<int (*)(rdma_cm_id*)> cache{nullptr};
  if (id == nullptr) return invalid();
  auto* real = resolved(cache, "rdma_destroy_id");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  cm_events::destroying(process_run(), id);
  return real(id);
}

}  // extern "C"

// Exported functions of librdmacm (RDMACM_1.0, libibverbs.map) that the
// harness watches around: each calls librdmacm's own (the next definition,
// RTLD_NEXT) and tells the interposer what it did (interposer/cm_events.h:
// which events the program holds). The calls on an id, a channel or an
// event refuse a NULL one with EINVAL, the errno librdmacm's man pages
// give for an invalid argument, where librdmacm itself would dereference
// it and crash; so are a connect and an accept on an id without a device. librdmacm calls them from
// within itself through its PLT too (rsockets, rdma_destroy_ep, the synchronous ids), so its own
// events are counted as the program's. A program that never loads librdmacm never calls them.
#include "cm_events.h"

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

extern "C" {

// Each caches librdmacm's definition in a static of its own.
int rdma_bind_addr(rdma_cm_id* id, sockaddr* address) {
  static std::atomic<int (*)(rdma_cm_id*, sockaddr*)> real{nullptr};
  return on_id("rdma_bind_addr", real, id, address);
}

int rdma_resolve_addr(rdma_cm_id* id, sockaddr* source, sockaddr* destination, int timeout_ms) {
  static std::atomic<int (*)(rdma_cm_id*, sockaddr*, sockaddr*, int)> real{nullptr};
  return on_id("rdma_resolve_addr", real, id, source, destination, timeout_ms);
}

int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
  static std::atomic<int (*)(rdma_cm_id*, int)> real{nullptr};
  return on_id("rdma_resolve_route", real, id, timeout_ms);
}

int rdma_listen(rdma_cm_id* id, int backlog) {
  static std::atomic<int (*)(rdma_cm_id*, int)> real{nullptr};
  return on_id("rdma_listen", real, id, backlog);
}

// A connect or accept on an id bound to no device (idle, or only bound to
// the wildcard: no resolved route, not a listener's child) is EINVAL, the
// kernel's answer (ucma_get_ctx_dev); librdmacm would first check the
// parameters against the device it does not have, through a NULL pointer.
int rdma_connect(rdma_cm_id* id, rdma_conn_param* parameters) {
  static std::atomic<int (*)(rdma_cm_id*, rdma_conn_param*)> real{nullptr};
  if (id != nullptr && id->verbs == nullptr) return invalid();
  return on_id("rdma_connect", real, id, parameters);
}

int rdma_accept(rdma_cm_id* id, rdma_conn_param* parameters) {
  static std::atomic<int (*)(rdma_cm_id*, rdma_conn_param*)> real{nullptr};
  if (id != nullptr && id->verbs == nullptr) return invalid();
  return on_id("rdma_accept", real, id, parameters);
}

int rdma_reject(rdma_cm_id* id, const void* data, uint8_t length) {
  static std::atomic<int (*)(rdma_cm_id*, const void*, uint8_t)> real{nullptr};
  return on_id("rdma_reject", real, id, data, length);
}

int rdma_disconnect(rdma_cm_id* id) {
  static std::atomic<int (*)(rdma_cm_id*)> real{nullptr};
  return on_id("rdma_disconnect", real, id);
}

int rdma_establish(rdma_cm_id* id) {
  static std::atomic<int (*)(rdma_cm_id*)> real{nullptr};
  return on_id("rdma_establish", real, id);
}

int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
  static std::atomic<int (*)(rdma_cm_id*, ibv_event_type)> real{nullptr};
  return on_id("rdma_notify", real, id, event);
}

int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  static std::atomic<int (*)(rdma_cm_id*, rdma_event_channel*)> real{nullptr};
  return on_id("rdma_migrate_id", real, id, channel);
}

int rdma_set_option(rdma_cm_id* id, int level, int name, void* value, size_t length) {
  static std::atomic<int (*)(rdma_cm_id*, int, int, void*, size_t)> real{nullptr};
  return on_id("rdma_set_option", real, id, level, name, value, length);
}

int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* attributes) {
  static std::atomic<int (*)(rdma_cm_id*, ibv_pd*, ibv_qp_init_attr*)> real{nullptr};
  return on_id("rdma_create_qp", real, id, pd, attributes);
}

int rdma_join_multicast(rdma_cm_id* id, sockaddr* address, void* context) {
  static std::atomic<int (*)(rdma_cm_id*, sockaddr*, void*)> real{nullptr};
  return on_id("rdma_join_multicast", real, id, address, context);
}

int rdma_leave_multicast(rdma_cm_id* id, sockaddr* address) {
  static std::atomic<int (*)(rdma_cm_id*, sockaddr*)> real{nullptr};
  return on_id("rdma_leave_multicast", real, id, address);
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  static std::atomic<int (*)(rdma_event_channel*, rdma_cm_event**)> cache{nullptr};
  if (channel == nullptr || event == nullptr) return invalid();
  auto* real = resolved(cache, "rdma_get_cm_event");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int result = real(channel, event);
  if (result == 0 && event != nullptr) cm_events::got(*event);
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
  cm_events::acked(event);  // before: the event is freed by the ack
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
  cm_events::destroying(id);
  return real(id);
}

}  // extern "C"

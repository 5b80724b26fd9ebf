// Exported functions of librdmacm (RDMACM_1.0, libibverbs.map) that the
// harness watches around: each calls librdmacm's own (the next definition,
// RTLD_NEXT) and tells the interposer what it did (interposer/cm_events.h:
// which events the program holds). librdmacm calls them from within
// itself through its PLT too (rsockets, rdma_destroy_ep, the synchronous
// ids), so its own events are counted as the program's. A program that
// never loads librdmacm never calls them.
#include "cm_events.h"

#include <dlfcn.h>
#include <rdma/rdma_cma.h>

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

}  // namespace

extern "C" {

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  static auto* real = next<int(rdma_event_channel*, rdma_cm_event**)>("rdma_get_cm_event");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int result = real(channel, event);
  if (result == 0 && event != nullptr) cm_events::got(*event);
  return result;
}

int rdma_ack_cm_event(rdma_cm_event* event) {
  static auto* real = next<int(rdma_cm_event*)>("rdma_ack_cm_event");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  cm_events::acked(event);  // before: the event is freed by the ack
  return real(event);
}

int rdma_destroy_id(rdma_cm_id* id) {
  static auto* real = next<int(rdma_cm_id*)>("rdma_destroy_id");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  cm_events::destroying(id);
  return real(id);
}

}  // extern "C"

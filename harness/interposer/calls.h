// The interposer's side of every exported verb that is not a fast path
// (those are trampolines: trampolines.cpp): one function per verb, with the
// verb's own signature, that runs the hooks (interposer.h) around the
// provider layer's call. The front door's exports only forward here, so
// that calls go one way: front door -> interposer -> provider.
#pragma once

#include "condition_table.h"
#include "interposer.h"
#include "verb_table.h"

#include <infiniband/verbs.h>

#include <cerrno>

// The real libibverbs signatures, not the macros verbs.h puts in front of
// some of them.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace verbfault::interposer::calls {

// A create call's result: a new object is named and traced, a failure
// traced against its parent; errno is kept.
template <class Handle>
Handle* created(Run& run, Handle* handle, ObjectKind kind, const void* parent,
                std::string_view call, Fields args = {}) {
  const int error = errno;
  if (handle != nullptr)
    interposer::created(run, kind, handle, parent, call, args);
  else
    interposer::create_failed(run, parent, call, args, error);
  errno = error;
  return handle;
}

// A call the fault engine made fail before it reached the provider.
template <class Handle>
Handle* fail_create(int error) {
  errno = error;
  return nullptr;
}

// ---- the verbs (record/verb_table.h) ----
// One function per row of the verb table, with the verb's own signature
// after the run it acts on (the front door passes it: interposer.h); a
// CALLER row's takes the return address of the exported call as well.
// Defined in calls_device.cpp, calls_resources.cpp, completion_events.cpp
// and async_events.cpp.
#define VERBFAULT_DECLARE_CALL_POINT(ret, name, params) \
  ret name(Run& run, VERBFAULT_UNPAREN params);
#define VERBFAULT_DECLARE_CALL_INSIDE VERBFAULT_DECLARE_CALL_POINT
#define VERBFAULT_DECLARE_CALL_CALLER(ret, name, params) \
  ret name(Run& run, VERBFAULT_UNPAREN params, const void* caller);
#define VERBFAULT_DECLARE_CALL(ret, name, symbol, version, params, args, front, route, by) \
  VERBFAULT_DECLARE_CALL_##front(ret, name, params)
VERBFAULT_VERBS(VERBFAULT_DECLARE_CALL)
#undef VERBFAULT_DECLARE_CALL
#undef VERBFAULT_DECLARE_CALL_POINT
#undef VERBFAULT_DECLARE_CALL_INSIDE
#undef VERBFAULT_DECLARE_CALL_CALLER

// ---- the simulated fabric's conditions (verbfault/fabric.h; calls_device.cpp) ----
#define VERBFAULT_DECLARE_CONDITION(name, params, args) int name params;
VERBFAULT_CONDITIONS(VERBFAULT_DECLARE_CONDITION)
#undef VERBFAULT_DECLARE_CONDITION

}  // namespace verbfault::interposer::calls

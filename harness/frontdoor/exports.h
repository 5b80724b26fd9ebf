// Shared pieces of the exported ibv_* front door: each export asks the
// interposer what to do around the call and reaches the provider through
// the provider layer's routing (harness/provider/verbs.h).
#pragma once

#include "interposer.h"
#include "verbs.h"

#include <infiniband/verbs.h>

#include <cerrno>

namespace verbfault::frontdoor {

// A create call's result through the interposer: a new object is named and
// traced, a failure traced against its parent.
template <class Handle>
Handle* created(Handle* handle, ObjectKind kind, const void* parent, std::string_view call,
                interposer::Fields args = {}) {
  const int error = errno;
  if (handle != nullptr)
    interposer::created(kind, handle, parent, call, args);
  else
    interposer::create_failed(parent, call, args, error);
  errno = error;
  return handle;
}

// A call the fault engine made fail before it reached the provider.
template <class Handle>
Handle* fail_create(int error) {
  errno = error;
  return nullptr;
}

}  // namespace verbfault::frontdoor

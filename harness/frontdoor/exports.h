// Shared pieces of the exported ibv_* front door.
#pragma once

#include "interposer.h"
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"

#include <infiniband/verbs.h>

// The exports are the real libibverbs signatures, not the macros verbs.h
// puts in front of some of them.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

extern "C" {
// Exported by libibverbs but declared only in its private driver.h.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       int* type);
}

namespace verbfault::frontdoor {

// Routing: an object belongs to a simulated device exactly when its
// context does.
inline bool simulated(const ibv_context* context) {
  return sim::owns(context);
}
template <class Object>
bool simulated(const Object* object) {
  return object != nullptr && sim::owns(object->context);
}
inline bool simulated(const ibv_device* device) {
  return sim::owns(device);
}

// A create call's result through the interposer: a new object is named and
// traced, a failure traced against its parent.
template <class Handle>
Handle* created(Handle* handle, ObjectKind kind, const void* parent, std::string_view call,
                interposer::Fields args = interposer::Fields::object()) {
  const int error = errno;
  if (handle != nullptr)
    interposer::created(kind, handle, parent, call, std::move(args));
  else
    interposer::create_failed(parent, call, std::move(args), error);
  errno = error;
  return handle;
}

// The real libibverbs calls some of its own exported functions (its
// ibv_reg_mr calls ibv_reg_mr_iova2), and with libverbfault.so first in the
// lookup order those calls come back here. While a thread is inside the
// real library, such a call goes straight through: the application made
// one call, and the interposer sees one.
class RealCall {
 public:
  RealCall() { ++depth(); }
  ~RealCall() { --depth(); }
  RealCall(const RealCall&) = delete;
  RealCall& operator=(const RealCall&) = delete;
  static bool inside() { return depth() > 0; }

 private:
  static int& depth() {
    thread_local int calls = 0;  // per thread: owned by the thread itself
    return calls;
  }
};

// A call the fault engine made fail before it reached the provider.
template <class Handle>
Handle* fail_create(int error) {
  errno = error;
  return nullptr;
}

}  // namespace verbfault::frontdoor

// The provider layer: the one place that reaches a provider. Each call
// goes to the simulated device (fakes/sim) when its object belongs to one,
// else to the real libibverbs behind libverbfault.so, with the exact
// signature and return convention of the libibverbs call it stands for
// (see the man page of each ibv_* call). No hooks, no faults, no trace:
// the interposer calls these after deciding what to do, and the engine
// calls them to drive a provider into a fault's state (modify_qp to ERR).
#pragma once

#include "verb_table.h"

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

// The real libibverbs signatures, not the macros verbs.h puts in front of
// some of them.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace verbfault::provider {

// ---- routing -------------------------------------------------------------
// An object belongs to a simulated device exactly when its context does.
bool simulated(const ibv_device* device);
bool simulated(const ibv_context* context);
template <class Object>
bool simulated(const Object* object) {
  return object != nullptr && simulated(object->context);
}

// libibverbs calls some of its own exported functions (its ibv_reg_mr
// calls ibv_reg_mr_iova2), and with libverbfault.so first in the lookup
// order those calls come back to the front door. While a thread is inside
// the real library (a RealCall is alive on it), such a call must go
// straight through: the application made one call, and the harness sees
// one.
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

// ---- the verbs (record/verb_table.h) -------------------------------------
// One function per row of the verb table, with the verb's own signature.
// The device list is the real devices followed by the simulated ones; on a
// machine without RDMA in its kernel (libibverbs fails with ENOSYS) the
// simulated ones. The ROUTED rows are generated (routing.cpp), the CUSTOM
// ones written in devices.cpp, resources.cpp and events.cpp.
#define VERBFAULT_DECLARE_PROVIDER(ret, name, symbol, version, params, args, front, route, by) \
  ret name params;
VERBFAULT_VERBS(VERBFAULT_DECLARE_PROVIDER)
#undef VERBFAULT_DECLARE_PROVIDER

}  // namespace verbfault::provider

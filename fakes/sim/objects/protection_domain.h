// ibv_pd, and the objects that live in one.
#pragma once

#include "handle.h"

#include <infiniband/verbs.h>

namespace verbfault::sim {

class Context;

class ProtectionDomain {
 public:
  explicit ProtectionDomain(Context& context) : context_(context) {
    handle_.owner = this;
    handle_.verbs.context = nullptr;  // set by the caller
  }
  ibv_pd* verbs() { return &handle_.verbs; }
  static ProtectionDomain* from(ibv_pd* pd) { return owner_of<ProtectionDomain, ibv_pd>(pd); }
  Context& context() { return context_; }

  // MRs, AHs, QPs and SRQs in this PD: ibv_dealloc_pd(3) fails with EBUSY
  // while any is alive.
  int children = 0;

 private:
  Handle<ibv_pd, ProtectionDomain> handle_;
  Context& context_;
};

}  // namespace verbfault::sim

// ibv_ah: the address vector of a UD destination.
#pragma once

#include "handle.h"

#include <infiniband/verbs.h>

namespace verbfault::sim {

class ProtectionDomain;

class AddressHandle {
 public:
  AddressHandle(ProtectionDomain& pd, const ibv_ah_attr& attr) : pd_(pd), attr_(attr) {
    handle_.owner = this;
  }
  ibv_ah* verbs() { return &handle_.verbs; }
  static AddressHandle* from(ibv_ah* ah) { return owner_of<AddressHandle, ibv_ah>(ah); }
  ProtectionDomain& pd() { return pd_; }
  const ibv_ah_attr& attr() const { return attr_; }

 private:
  Handle<ibv_ah, AddressHandle> handle_;
  ProtectionDomain& pd_;
  ibv_ah_attr attr_;
};

}  // namespace verbfault::sim

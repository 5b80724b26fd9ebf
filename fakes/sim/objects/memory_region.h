// ibv_mr: registered memory, reached by lkey locally and rkey remotely.
#pragma once

#include "handle.h"

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbfault::sim {

class ProtectionDomain;

class MemoryRegion {
 public:
  MemoryRegion(ProtectionDomain& pd, void* addr, size_t length, uint64_t iova, unsigned int access,
               uint32_t key);
  ~MemoryRegion();
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  ibv_mr* verbs() { return &handle_.verbs; }
  static MemoryRegion* from(ibv_mr* mr) { return owner_of<MemoryRegion, ibv_mr>(mr); }
  ProtectionDomain& pd() { return *pd_; }
  uint32_t key() const { return key_; }
  unsigned int access() const { return access_; }

  // The host address of [iova, iova + length) if it lies inside the region,
  // else nullptr. Addresses in work requests are in the region's iova space
  // (for ibv_reg_mr, iova == addr).
  uint8_t* translate(uint64_t iova, uint64_t length) const;
  void reregister(ProtectionDomain* pd, void* addr, size_t length, int access);

 private:
  Handle<ibv_mr, MemoryRegion> handle_;
  ProtectionDomain* pd_;
  uint8_t* addr_;
  uint64_t length_;
  uint64_t iova_;
  unsigned int access_;
  uint32_t key_;
  // On a local fabric: the segment its whole pages were moved to, so that
  // other processes read them in place (shared_memory.h); 0: none.
  uint64_t shared_ = 0;
};

}  // namespace verbfault::sim

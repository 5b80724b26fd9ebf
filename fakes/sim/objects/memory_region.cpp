#include "memory_region.h"

#include "context.h"
#include "fabric.h"
#include "protection_domain.h"
#include "shared_memory.h"

namespace verbfault::sim {

MemoryRegion::MemoryRegion(ProtectionDomain& pd, void* addr, size_t length, uint64_t iova,
                           unsigned int access, uint32_t key)
    : pd_(&pd),
      addr_(static_cast<uint8_t*>(addr)),
      length_(length),
      iova_(iova),
      access_(access),
      key_(key) {
  handle_.owner = this;
  ibv_mr& mr = handle_.verbs;
  mr.pd = pd.verbs();
  mr.context = pd.verbs()->context;
  mr.addr = addr;
  mr.length = length;
  mr.lkey = key;
  mr.rkey = key;
  if (pd.context().fabric().endpoint() != nullptr) shared_ = shared_memory::share(addr, length);
}

MemoryRegion::~MemoryRegion() {
  shared_memory::release(shared_);
}

uint8_t* MemoryRegion::translate(uint64_t iova, uint64_t length) const {
  if (iova < iova_ || length > length_ || iova - iova_ > length_ - length) return nullptr;
  return addr_ + (iova - iova_);
}

void MemoryRegion::reregister(ProtectionDomain* pd, void* addr, size_t length, int access) {
  if (pd != nullptr) {
    pd_ = pd;
    handle_.verbs.pd = pd->verbs();
  }
  if (addr != nullptr) {
    addr_ = static_cast<uint8_t*>(addr);
    iova_ = reinterpret_cast<uintptr_t>(addr);
    length_ = length;
    handle_.verbs.addr = addr;
    handle_.verbs.length = length;
    shared_memory::release(shared_);
    shared_ =
        pd_->context().fabric().endpoint() != nullptr ? shared_memory::share(addr, length) : 0;
  }
  if (access >= 0) access_ = static_cast<unsigned int>(access);
}

}  // namespace verbfault::sim

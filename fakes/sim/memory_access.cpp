#include "memory_access.h"

#include "fabric.h"
#include "memory_region.h"
#include "protection_domain.h"

#include <algorithm>
#include <cstring>

namespace verbfault::sim {

namespace {

uint8_t* local_memory(ProtectionDomain& pd, const ibv_sge& sge, bool write) {
  MemoryRegion* mr = Fabric::get().find_mr(sge.lkey);
  if (mr == nullptr || &mr->pd() != &pd) return nullptr;
  if (write && !(mr->access() & IBV_ACCESS_LOCAL_WRITE)) return nullptr;
  return mr->translate(sge.addr, sge.length);
}

}  // namespace

bool gather(ProtectionDomain& pd, std::span<const ibv_sge> sges, std::vector<uint8_t>& out) {
  for (const ibv_sge& sge : sges) {
    if (sge.length == 0) continue;
    const uint8_t* p = local_memory(pd, sge, false);
    if (p == nullptr) return false;
    out.insert(out.end(), p, p + sge.length);
  }
  return true;
}

bool writable(ProtectionDomain& pd, std::span<const ibv_sge> sges) {
  for (const ibv_sge& sge : sges)
    if (sge.length != 0 && local_memory(pd, sge, true) == nullptr) return false;
  return true;
}

void scatter(ProtectionDomain& pd, std::span<const ibv_sge> sges, uint64_t offset,
             const uint8_t* data, uint64_t length) {
  for (const ibv_sge& sge : sges) {
    if (length == 0) return;
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    uint8_t* p = local_memory(pd, sge, true);
    uint64_t n = std::min<uint64_t>(sge.length - offset, length);
    std::memmove(p + offset, data, n);
    data += n;
    length -= n;
    offset = 0;
  }
}

uint8_t* remote_memory(ProtectionDomain& pd, uint32_t rkey, uint64_t addr, uint64_t length,
                       unsigned int access) {
  MemoryRegion* mr = Fabric::get().find_mr(rkey);
  if (mr == nullptr || &mr->pd() != &pd || (mr->access() & access) != access) return nullptr;
  return mr->translate(addr, length);
}

}  // namespace verbfault::sim

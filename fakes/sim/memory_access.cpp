#include "memory_access.h"

#include "fabric.h"
#include "memory_region.h"
#include "memory_window.h"
#include "protection_domain.h"
#include "queue_pair.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace verbfault::sim {

namespace {

uint8_t* local_memory(ProtectionDomain& pd, const ibv_sge& sge, bool write) {
  MemoryRegion* mr = Fabric::get().find_mr(sge.lkey);
  if (mr == nullptr || &mr->pd() != &pd) return nullptr;
  if (write && !(mr->access() & IBV_ACCESS_LOCAL_WRITE)) return nullptr;
  return mr->translate(sge.addr, sge.length);
}

template <class Piece>
bool resolve(ProtectionDomain& pd, std::span<const ibv_sge> sges, bool write, Pieces<Piece>& out) {
  for (const ibv_sge& sge : sges) {
    if (sge.length == 0) continue;
    uint8_t* p = local_memory(pd, sge, write);
    if (p == nullptr) return false;
    out.push_back(Piece(p, sge.length));
  }
  return true;
}

// Whether [a, a + n) and [b, b + m) share a byte; std::less because the
// two may be unrelated objects, which the built-in < does not order.
bool intersect(const uint8_t* a, std::size_t n, const uint8_t* b, std::size_t m) {
  std::less<const uint8_t*> before;
  return before(a, b + m) && before(b, a + n);
}

bool overlap(std::span<const Target> to, std::span<const Source> from) {
  for (const Target& t : to)
    for (const Source& s : from)
      if (intersect(t.data(), t.size(), s.data(), s.size())) return true;
  return false;
}

// copy() where no byte of `from` is in `to`: the order of the writes cannot
// change what is read.
void copy_disjoint(std::span<const Target> to, uint64_t offset, std::span<const Source> from) {
  auto target = to.begin();
  for (const Source& piece : from) {
    const uint8_t* data = piece.data();
    uint64_t left = piece.size();
    while (left != 0) {
      if (offset >= target->size()) {
        offset -= target->size();
        ++target;
        continue;
      }
      const uint64_t n = std::min<uint64_t>(target->size() - offset, left);
      std::memcpy(target->data() + offset, data, n);
      data += n;
      left -= n;
      offset += n;
    }
  }
}

}  // namespace

bool readable(ProtectionDomain& pd, std::span<const ibv_sge> sges, Pieces<Source>& out) {
  return resolve(pd, sges, false, out);
}

bool writable(ProtectionDomain& pd, std::span<const ibv_sge> sges, Pieces<Target>& out) {
  return resolve(pd, sges, true, out);
}

uint64_t length_of(std::span<const Source> pieces) {
  uint64_t length = 0;
  for (const Source& piece : pieces) length += piece.size();
  return length;
}

void copy(std::span<const Target> to, uint64_t offset, std::span<const Source> from) {
  if (!overlap(to, from)) return copy_disjoint(to, offset, from);
  // Rare (a loopback writing over its own source): read it all first.
  std::vector<uint8_t> sent;
  sent.reserve(length_of(from));
  for (const Source& piece : from) sent.insert(sent.end(), piece.begin(), piece.end());
  const Source whole(sent);
  copy_disjoint(to, offset, std::span(&whole, 1));
}

uint8_t* remote_memory(QueuePair& qp, uint32_t rkey, uint64_t addr, uint64_t length,
                       unsigned int access) {
  MemoryRegion* mr = Fabric::get().find_mr(rkey);
  // Not a region's rkey: perhaps a window's (their keys never coincide).
  if (mr == nullptr) return memory_window::remote_memory(qp, rkey, addr, length, access);
  if (&mr->pd() != &qp.pd() || (mr->access() & access) != access) return nullptr;
  return mr->translate(addr, length);
}

}  // namespace verbfault::sim

#include "memory_access.h"

#include "context.h"
#include "fabric.h"
#include "fault_guard.h"
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
  MemoryRegion* mr = pd.context().fabric().find_mr(sge.lkey);
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

bool copy(std::span<const Target> to, uint64_t offset, std::span<const Source> from) {
  struct Job {
    std::span<const Target> to;
    uint64_t offset;
    std::span<const Source> from;
    uint8_t* bounce;  // overlapping: the whole source is read here first
  };
  if (!overlap(to, from)) {
    Job job{to, offset, from, nullptr};
    return fault_guard::run(
        [](void* j) {
          const Job& job = *static_cast<Job*>(j);
          copy_disjoint(job.to, job.offset, job.from);
        },
        &job);
  }
  // Rare (a loopback writing over its own source): read it all first. The
  // buffer is allocated outside the guard (a jump out leaks nothing).
  std::vector<uint8_t> sent(length_of(from));
  Job job{to, offset, from, sent.data()};
  return fault_guard::run(
      [](void* j) {
        const Job& job = *static_cast<Job*>(j);
        uint64_t at = 0;
        for (const Source& piece : job.from) {
          std::memcpy(job.bounce + at, piece.data(), piece.size());
          at += piece.size();
        }
        const Source whole(job.bounce, at);
        copy_disjoint(job.to, job.offset, std::span(&whole, 1));
      },
      &job);
}

bool present(std::span<const Source> pieces) {
  return fault_guard::run(
      [](void* p) {
        // One read per 4 KiB (the smallest page) and of the last byte.
        for (const Source& piece : *static_cast<std::span<const Source>*>(p)) {
          const volatile uint8_t* data = piece.data();
          for (std::size_t at = 0; at < piece.size(); at += 4096) (void)data[at];
          if (!piece.empty()) (void)data[piece.size() - 1];
        }
      },
      &pieces);
}

uint8_t* remote_memory(QueuePair& qp, uint32_t rkey, uint64_t addr, uint64_t length,
                       unsigned int access) {
  MemoryRegion* mr = qp.fabric().find_mr(rkey);
  // Not a region's rkey: perhaps a window's (their keys never coincide).
  if (mr == nullptr) return memory_window::remote_memory(qp, rkey, addr, length, access);
  if (&mr->pd() != &qp.pd() || (mr->access() & access) != access) return nullptr;
  return mr->translate(addr, length);
}

}  // namespace verbfault::sim

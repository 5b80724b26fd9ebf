// Checked access to registered memory through lkeys and rkeys.
//
// A message's data is copied once, from where the sender's SGEs (or the
// WQE's inline copy) point straight into the target memory, as a NIC's DMA
// reads the one and writes the other. The checks resolve SGEs and keys to
// host memory first, so that a message that fails one writes nothing, and
// copy() then moves the bytes.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace verbfault::sim {

class ProtectionDomain;
class QueuePair;

// Registered memory resolved to host addresses: the non-empty SGEs of a
// list, in order.
using Source = std::span<const uint8_t>;
using Target = std::span<uint8_t>;

// The resolved SGEs of one work request, without a heap allocation for up to
// kInlinePieces of them (a WR has at most the device's max_sge, 30 on the
// standard profile); longer lists spill to the heap. It lives in the frame
// that checks and copies one message; the inline slots are constructed only
// when used, since most WRs have one SGE and the whole small-message path
// takes about 100 ns.
template <class Piece>
class Pieces {
 public:
  static constexpr std::size_t kInlinePieces = 32;
  Pieces() : none_() {}
  Pieces(const Pieces&) = delete;
  Pieces& operator=(const Pieces&) = delete;

  void push_back(Piece piece) {
    if (spilled_.empty() && size_ < kInlinePieces) {
      std::construct_at(&inline_[size_++], piece);
      return;
    }
    if (spilled_.empty()) spilled_.assign(inline_, inline_ + size_);
    spilled_.push_back(piece);
  }
  std::span<const Piece> view() const {
    if (!spilled_.empty()) return spilled_;
    return {inline_, size_};
  }

 private:
  // Pieces are trivially destructible: the union needs no destructor.
  static_assert(std::is_trivially_destructible_v<Piece>);
  union {
    char none_;
    Piece inline_[kInlinePieces];
  };
  std::size_t size_ = 0;
  std::vector<Piece> spilled_;
};

// Resolves local SGEs to read from, appending them to `out`. False when an
// lkey is unknown, belongs to another PD or an SGE leaves its region
// (IBV_WC_LOC_PROT_ERR); zero-length SGEs are not looked at.
bool readable(ProtectionDomain& pd, std::span<const ibv_sge> sges, Pieces<Source>& out);

// Resolves local SGEs to write into: the same checks and
// IBV_ACCESS_LOCAL_WRITE.
bool writable(ProtectionDomain& pd, std::span<const ibv_sge> sges, Pieces<Target>& out);

// The total length of resolved pieces.
uint64_t length_of(std::span<const Source> pieces);

// Copies the bytes of `from`, in order, into `to` from byte `offset` of it
// on (the caller checked that they fit). Where the two share bytes (a
// loopback that writes over its own source), the result is that of reading
// the whole source before writing: the message is sent before it lands.
// False when a page of either was unmapped or write-protected by the
// application since it registered it (fault_guard.h): the copy stopped
// there and the caller fails the operation as a protection error.
[[nodiscard]] bool copy(std::span<const Target> to, uint64_t offset, std::span<const Source> from);

// Whether every page of `pieces` can still be read: the requester's check
// of its source, and the responder's of an RDMA READ's, before the data
// leaves (a registered page the application unmapped since: false).
bool present(std::span<const Source> pieces);

// The host address of [addr, addr + length) behind an rkey, for a request
// to the responder `qp`: an MR in its PD that allows `access`
// (IBV_ACCESS_REMOTE_*), or a memory window bound so that it does
// (memory_window.h); else nullptr.
uint8_t* remote_memory(QueuePair& qp, uint32_t rkey, uint64_t addr, uint64_t length,
                       unsigned int access);

}  // namespace verbfault::sim

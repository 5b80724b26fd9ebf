// ibv_mw: a memory window, a remote view of part of a memory region
// (IBA 10.6.7), with its own rkey and access rights.
//
// Type 1 windows are bound by ibv_bind_mw(3) and stay valid until they are
// deallocated (a zero-length bind unbinds them); type 2 (2B: bound to the QP
// that bound it, IBA 10.6.7.2.2) are bound by an IBV_WR_BIND_MW work request
// and must be invalidated (IBV_WR_LOCAL_INV, or a peer's
// IBV_WR_SEND_WITH_INV) before they can be bound again (IBA 10.6.7.3).
//
// A window's rkey is index << 8 | key byte: the index is reserved from the
// same table as the MRs' keys (Fabric::reserve_mr_key), so an rkey names an
// MR or a window, never both; each bind sets the key byte the consumer
// chose (ibv_inc_rkey), so a stale rkey of an earlier binding stops working.
// Guarded by Fabric::mutex.
#pragma once

#include "handle.h"

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbfault::sim {

class MemoryRegion;
class ProtectionDomain;
class QueuePair;
struct SendWqe;

class MemoryWindow {
 public:
  MemoryWindow(ProtectionDomain& pd, ibv_mw_type type, uint32_t rkey);
  ~MemoryWindow();
  MemoryWindow(const MemoryWindow&) = delete;
  MemoryWindow& operator=(const MemoryWindow&) = delete;

  ibv_mw* verbs() { return &handle_.verbs; }
  static MemoryWindow* from(ibv_mw* mw) { return owner_of<MemoryWindow, ibv_mw>(mw); }
  ProtectionDomain& pd() { return *pd_; }
  ibv_mw_type type() const { return type_; }
  uint32_t rkey() const { return rkey_; }
  // Whether remote operations may use it: bound to a non-empty range.
  bool bound() const { return mr_ != nullptr; }
  MemoryRegion* mr() const { return mr_; }
  QueuePair* qp() const { return qp_; }

  // Takes the binding of an IBV_WR_BIND_MW (checked by the caller); a
  // zero length unbinds (type 1).
  void bind(uint8_t key, MemoryRegion* mr, uint64_t addr, uint64_t length, unsigned int access,
            QueuePair* qp);
  void unbind();

  // The host address of [addr, addr + length) of the window if it allows
  // `access` (IBV_ACCESS_REMOTE_*), else nullptr. `addr` is an offset for a
  // zero-based window (ibv_bind_mw(3), IBV_ACCESS_ZERO_BASED).
  uint8_t* translate(uint64_t addr, uint64_t length, unsigned int access) const;

 private:
  Handle<ibv_mw, MemoryWindow> handle_;
  ProtectionDomain* pd_;
  ibv_mw_type type_;
  uint32_t rkey_;
  MemoryRegion* mr_ = nullptr;
  QueuePair* qp_ = nullptr;  // type 2: the QP it was bound through
  uint64_t addr_ = 0;
  uint64_t length_ = 0;
  unsigned int access_ = 0;
};

// ibv_context_ops members (provider.cpp install_ops).
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw(ibv_mw* mw);
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind);

namespace memory_window {

// The window an rkey names now (its current key byte), or nullptr.
MemoryWindow* find(uint32_t rkey);
// The requester's local operations: a status (IBV_WC_SUCCESS, or the error
// to complete the WQE with) and the vendor_err that goes with it.
struct Outcome {
  ibv_wc_status status;
  uint32_t vendor_err;
};
// IBV_WR_BIND_MW at the head of `qp`'s send queue (IBA 10.6.7.2).
Outcome bind(QueuePair& qp, const SendWqe& wqe);
// IBV_WR_LOCAL_INV (IBA 10.6.7.3).
Outcome invalidate_local(QueuePair& qp, uint32_t rkey);
// The responder's side of IBV_WR_SEND_WITH_INV: whether `rkey` named a
// type 2 window bound through `qp` (IBA 10.6.7.3, o10-37.2.26), now free.
bool invalidate_remote(QueuePair& qp, uint32_t rkey);
// The responder's rkey check for a window: its memory if the window is
// bound, in `qp`'s PD (and bound through `qp`, type 2), allows `access` and
// holds the range; else nullptr.
uint8_t* remote_memory(QueuePair& qp, uint32_t rkey, uint64_t addr, uint64_t length,
                       unsigned int access);
// Whether a window is bound to `mr` (ibv_dereg_mr(3) fails then).
bool bound_to(const MemoryRegion& mr);
// A QP being destroyed: the type 2 windows bound through it lose their
// binding (nothing can reach them any more).
void forget_qp(const QueuePair& qp);

}  // namespace memory_window

}  // namespace verbfault::sim

#include "memory_window.h"

#include "completion.h"
#include "context.h"
#include "device.h"
#include "fabric.h"
#include "memory_region.h"
#include "protection_domain.h"
#include "queue_pair.h"
#include "work_request.h"

#include <cerrno>
#include <mutex>
#include <unordered_map>

namespace verbfault::sim {

namespace {

// Windows by rkey index (rkey >> 8): the key byte changes with each bind.
// Guarded by Fabric::mutex; never destroyed (a window may outlive main's
// statics in a context closed at exit).
std::unordered_map<uint32_t, MemoryWindow*>& windows() {
  static auto* table = new std::unordered_map<uint32_t, MemoryWindow*>();
  return *table;
}

MemoryWindow* by_index(uint32_t rkey) {
  auto it = windows().find(rkey >> 8);
  return it == windows().end() ? nullptr : it->second;
}

// ibv_bind_mw(3): the access a window may grant. IBV_ACCESS_LOCAL_WRITE is
// accepted and means nothing for a window (pyverbs binds with it; rxe takes
// every MR access flag, RXE_ACCESS_SUPPORTED_MW).
constexpr unsigned int kWindowAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                       IBV_ACCESS_ZERO_BASED;

constexpr memory_window::Outcome kDone{IBV_WC_SUCCESS, kVendorNone};
constexpr memory_window::Outcome kBindError{IBV_WC_MW_BIND_ERR, kVendorMemoryWindowBind};
// rxe completes a failed local invalidate with IB_WC_LOC_QP_OP_ERR
// (rxe_req.c rxe_do_local_ops); IBA 10.6.7.3 leaves the status open.
constexpr memory_window::Outcome kInvalidateError{IBV_WC_LOC_QP_OP_ERR, kVendorLocalQpOperation};

}  // namespace

MemoryWindow::MemoryWindow(ProtectionDomain& pd, ibv_mw_type type, uint32_t rkey)
    : pd_(&pd), type_(type), rkey_(rkey) {
  handle_.owner = this;
  ibv_mw& mw = handle_.verbs;
  mw.context = pd.verbs()->context;
  mw.pd = pd.verbs();
  mw.rkey = rkey;
  mw.type = type;
  windows()[rkey >> 8] = this;
}

MemoryWindow::~MemoryWindow() {
  windows().erase(rkey_ >> 8);
  pd_->context().fabric().unregister_mr(handle_.verbs.handle);  // the key reserved at allocation
}

void MemoryWindow::bind(uint8_t key, MemoryRegion* mr, uint64_t addr, uint64_t length,
                        unsigned int access, QueuePair* qp) {
  rkey_ = (rkey_ & ~0xffu) | key;
  mr_ = length != 0 ? mr : nullptr;
  addr_ = addr;
  length_ = length;
  access_ = access;
  qp_ = type_ == IBV_MW_TYPE_2 ? qp : nullptr;
}

void MemoryWindow::unbind() {
  mr_ = nullptr;
  qp_ = nullptr;
  addr_ = length_ = 0;
  access_ = 0;
}

uint8_t* MemoryWindow::translate(uint64_t addr, uint64_t length, unsigned int access) const {
  if (mr_ == nullptr || (access_ & access) != access) return nullptr;
  // IBA 10.6.7.1: the range is checked against the window, then translated
  // through its region.
  const uint64_t offset = (access_ & IBV_ACCESS_ZERO_BASED) ? addr : addr - addr_;
  if (!(access_ & IBV_ACCESS_ZERO_BASED) && addr < addr_) return nullptr;
  if (length > length_ || offset > length_ - length) return nullptr;
  return mr_->translate(addr_ + offset, length);
}

ibv_mw* alloc_mw(ibv_pd* verbs, ibv_mw_type type) {
  // ibv_alloc_mw(3) names types 1 and 2; the kernel's uverbs rejects any
  // other type with EINVAL before a driver sees it.
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
    errno = EINVAL;
    return nullptr;
  }
  auto guard = enter_device();
  ProtectionDomain* pd = ProtectionDomain::from(verbs);
  if (pd->context().device().fatal()) {
    errno = EIO;
    return nullptr;
  }
  // A device profile without windows (max_mw 0): the verb is unsupported,
  // as on a NIC without them.
  if (pd->context().device().profile().device.max_mw == 0) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  const uint32_t key = pd->context().fabric().reserve_mr_key();
  auto mw = std::make_unique<MemoryWindow>(*pd, type, key);
  mw->verbs()->handle = key;
  ++pd->children;
  return adopt(pd->context().mws, std::move(mw))->verbs();
}

int dealloc_mw(ibv_mw* verbs) {
  auto guard = enter_device();
  MemoryWindow* mw = MemoryWindow::from(verbs);
  // IBA 10.6.7.2.5: deallocating a bound window invalidates it; its rkey
  // then names nothing.
  --mw->pd().children;
  mw->pd().context().mws.erase(mw);
  return 0;
}

int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
  // ibv_bind_mw(3) (libibverbs checked the type and the MR's PD): a type 1
  // window cannot be zero based (IBA o10-36.2.2).
  if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;
  ibv_send_wr wr{};
  wr.wr_id = bind->wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = bind->send_flags;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
  wr.bind_mw.bind_info = bind->bind_info;
  auto guard = enter_device();
  if (Context::from(qp->context)->device().fatal()) return EIO;
  ibv_send_wr* bad = nullptr;
  if (int err = QueuePair::from(qp)->post_send(&wr, &bad)) return err;
  // ibv_bind_mw(3): "the R_key of the memory window after the bind is
  // returned in mw->rkey" at once; the application restores the old one if
  // the bind completes in error.
  mw->rkey = wr.bind_mw.rkey;
  return 0;
}

namespace memory_window {

MemoryWindow* find(uint32_t rkey) {
  MemoryWindow* mw = by_index(rkey);
  return mw != nullptr && mw->rkey() == rkey ? mw : nullptr;
}

Outcome bind(QueuePair& qp, const SendWqe& wqe) {
  MemoryWindow* mw = by_index(wqe.mw_rkey);  // deallocated since the post: nullptr
  if (mw == nullptr) return kBindError;
  const unsigned int access = wqe.bind_access;
  if (access & ~kWindowAccess) return kBindError;
  const bool type2 = mw->type() == IBV_MW_TYPE_2;
  if (type2) {
    // IBA o10-37.2.30: only a free type 2 window binds; C10-72: through a
    // QP of its PD; o10-37.2.40: not to nothing (invalidation unbinds it).
    if (mw->bound() || &qp.pd() != &mw->pd()) return kBindError;
    if (wqe.bind_lkey == 0 || wqe.bind_length == 0) return kBindError;
  } else if (access & IBV_ACCESS_ZERO_BASED) {
    return kBindError;  // o10-36.2.2
  }
  MemoryRegion* mr = nullptr;
  if (wqe.bind_length != 0) {
    mr = qp.fabric().find_mr(wqe.bind_lkey);  // deregistered since the post: nullptr
    if (mr == nullptr || &mr->pd() != &mw->pd()) return kBindError;
    // C10-73: the region allows binding; C10-74: a writable window needs a
    // locally writable region; C10-75: the window lies inside the region.
    if (!(mr->access() & IBV_ACCESS_MW_BIND)) return kBindError;
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access() & IBV_ACCESS_LOCAL_WRITE))
      return kBindError;
    if (mr->translate(wqe.bind_addr, wqe.bind_length) == nullptr) return kBindError;
  }
  mw->bind(static_cast<uint8_t>(wqe.rkey & 0xff), mr, wqe.bind_addr, wqe.bind_length, access, &qp);
  return kDone;
}

Outcome invalidate_local(QueuePair& qp, uint32_t rkey) {
  MemoryWindow* mw = find(rkey);
  // o10-37.2.26: type 1 windows are not invalidated by a work request; a
  // free window has nothing to invalidate. MRs of ibv_reg_mr cannot be
  // invalidated either (rxe_invalidate_mr: not a fast-register MR).
  if (mw == nullptr || mw->type() != IBV_MW_TYPE_2 || !mw->bound() || &mw->pd() != &qp.pd())
    return kInvalidateError;
  mw->unbind();
  return kDone;
}

bool invalidate_remote(QueuePair& qp, uint32_t rkey) {
  MemoryWindow* mw = find(rkey);
  if (mw == nullptr || mw->type() != IBV_MW_TYPE_2 || !mw->bound() || mw->qp() != &qp) return false;
  mw->unbind();
  return true;
}

uint8_t* remote_memory(QueuePair& qp, uint32_t rkey, uint64_t addr, uint64_t length,
                       unsigned int access) {
  MemoryWindow* mw = find(rkey);
  if (mw == nullptr || &mw->pd() != &qp.pd()) return nullptr;
  // IBA 10.6.7.2.2: a type 2B window is reached only through its QP.
  if (mw->type() == IBV_MW_TYPE_2 && mw->qp() != &qp) return nullptr;
  return mw->translate(addr, length, access);
}

bool bound_to(const MemoryRegion& mr) {
  for (const auto& [index, mw] : windows())
    if (mw->mr() == &mr) return true;
  return false;
}

void forget_qp(const QueuePair& qp) {
  for (const auto& [index, mw] : windows())
    if (mw->qp() == &qp) mw->unbind();
}

}  // namespace memory_window

}  // namespace verbfault::sim

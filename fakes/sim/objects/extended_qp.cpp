#include "extended_qp.h"

#include "context.h"
#include "device.h"
#include "fabric.h"
#include "queue_pair.h"
#include "verbfault/sim/provider.h"

#include <cerrno>
#include <cstring>
#include <mutex>

namespace verbfault::sim {

namespace {

using Lock = std::unique_lock<std::mutex>;

QueuePair& owner(ibv_qp_ex* qpx) {
  return *QueuePair::from(&qpx->qp_base);
}

// The send operations each QP type allows (ibv_wr_post(3), "QP Type").
uint64_t allowed_send_ops(ibv_qp_type type) {
  const uint64_t any = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
  // Writes, and the memory window operations (memory_window.h) on UC and RC.
  const uint64_t writes = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                          IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
                          IBV_QP_EX_WITH_SEND_WITH_INV;
  const uint64_t rc_only = IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                           IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
  switch (type) {
    case IBV_QPT_RC:
      return any | writes | rc_only;
    case IBV_QPT_UC:
      return any | writes;
    case IBV_QPT_UD:
      return any;
    default:
      return 0;
  }
}

void fail_batch(WrBatch& batch, int error) {
  if (batch.error == 0) batch.error = error;
}

// Starts a WR of `opcode` with the wr_id and wr_flags the application set
// in the ibv_qp_ex; nullptr (and the batch fails) when the QP was not
// created for the operation or no batch is open.
ibv_send_wr* begin_wr(ibv_qp_ex* qpx, ibv_wr_opcode opcode, uint64_t send_op) {
  QueuePair& qp = owner(qpx);
  WrBatch& batch = qp.wr_batch;
  if (!batch.open || !(qp.send_ops_flags & send_op)) {
    fail_batch(batch, EINVAL);
    return nullptr;
  }
  batch.wrs.emplace_back();
  batch.sges.emplace_back();
  batch.inlined.emplace_back();
  ibv_send_wr& wr = batch.wrs.back();
  wr.wr_id = qpx->wr_id;
  wr.send_flags = qpx->wr_flags;
  wr.opcode = opcode;
  return &wr;
}

// The WR the setters apply to: the last one built.
ibv_send_wr* last_wr(ibv_qp_ex* qpx) {
  WrBatch& batch = owner(qpx).wr_batch;
  if (!batch.open || batch.wrs.empty()) {
    fail_batch(batch, EINVAL);
    return nullptr;
  }
  return &batch.wrs.back();
}

void wr_start(ibv_qp_ex* qpx) {
  Lock guard = enter_device();
  WrBatch& batch = owner(qpx).wr_batch;
  batch = WrBatch{};
  batch.open = true;
}

int wr_complete(ibv_qp_ex* qpx) {
  Lock guard = enter_device();
  QueuePair& qp = owner(qpx);
  WrBatch batch = std::move(qp.wr_batch);
  qp.wr_batch = WrBatch{};
  if (!batch.open) return EINVAL;
  if (qp.context().device().fatal()) return EIO;
  if (batch.error != 0) return batch.error;
  if (batch.wrs.empty()) return 0;
  for (std::size_t i = 0; i + 1 < batch.wrs.size(); ++i) batch.wrs[i].next = &batch.wrs[i + 1];
  if (int err = qp.check_send_list(&batch.wrs.front())) return err;
  ibv_send_wr* bad = nullptr;
  return qp.post_send(&batch.wrs.front(), &bad);
}

void wr_abort(ibv_qp_ex* qpx) {
  Lock guard = enter_device();
  owner(qpx).wr_batch = WrBatch{};
}

void wr_send(ibv_qp_ex* qpx) {
  Lock guard = enter_device();
  begin_wr(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

void wr_send_imm(ibv_qp_ex* qpx, __be32 imm_data) {
  Lock guard = enter_device();
  if (ibv_send_wr* wr = begin_wr(qpx, IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM))
    wr->imm_data = imm_data;
}

void rdma(ibv_qp_ex* qpx, ibv_wr_opcode opcode, uint64_t send_op, uint32_t rkey,
          uint64_t remote_addr, __be32 imm_data) {
  Lock guard = enter_device();
  if (ibv_send_wr* wr = begin_wr(qpx, opcode, send_op)) {
    wr->wr.rdma.rkey = rkey;
    wr->wr.rdma.remote_addr = remote_addr;
    wr->imm_data = imm_data;
  }
}

void wr_rdma_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  rdma(qpx, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE, rkey, remote_addr, 0);
}

void wr_rdma_write_imm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, __be32 imm_data) {
  rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
       imm_data);
}

void wr_rdma_read(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  rdma(qpx, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ, rkey, remote_addr, 0);
}

void atomic(ibv_qp_ex* qpx, ibv_wr_opcode opcode, uint64_t send_op, uint32_t rkey,
            uint64_t remote_addr, uint64_t compare_add, uint64_t swap) {
  Lock guard = enter_device();
  if (ibv_send_wr* wr = begin_wr(qpx, opcode, send_op)) {
    wr->wr.atomic.rkey = rkey;
    wr->wr.atomic.remote_addr = remote_addr;
    wr->wr.atomic.compare_add = compare_add;
    wr->wr.atomic.swap = swap;
  }
}

void wr_atomic_cmp_swp(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, uint64_t compare,
                       uint64_t swap) {
  atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
         compare, swap);
}

void wr_atomic_fetch_add(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, uint64_t add) {
  atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
         add, 0);
}

void wr_send_inv(ibv_qp_ex* qpx, uint32_t invalidate_rkey) {
  Lock guard = enter_device();
  if (ibv_send_wr* wr = begin_wr(qpx, IBV_WR_SEND_WITH_INV, IBV_QP_EX_WITH_SEND_WITH_INV))
    wr->invalidate_rkey = invalidate_rkey;
}

void wr_local_inv(ibv_qp_ex* qpx, uint32_t invalidate_rkey) {
  Lock guard = enter_device();
  if (ibv_send_wr* wr = begin_wr(qpx, IBV_WR_LOCAL_INV, IBV_QP_EX_WITH_LOCAL_INV))
    wr->invalidate_rkey = invalidate_rkey;
}

// ibv_wr_post(3): binds a type 2 window; `bind_info` is copied now.
void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* bind_info) {
  Lock guard = enter_device();
  if (ibv_send_wr* wr = begin_wr(qpx, IBV_WR_BIND_MW, IBV_QP_EX_WITH_BIND_MW)) {
    wr->bind_mw.mw = mw;
    wr->bind_mw.rkey = rkey;
    wr->bind_mw.bind_info = *bind_info;
  }
}

// The data of the last WR: its SGE list (copied: ibv_wr_post(3) lets the
// caller reuse the list once the setter returns). A count over the QP's
// max_send_sge, or no list to read, fails the batch with EINVAL (as
// ibv_post_send(3) would the WR) before the list is read.
void set_sges(ibv_qp_ex* qpx, const ibv_sge* list, std::size_t count) {
  ibv_send_wr* wr = last_wr(qpx);
  if (wr == nullptr) return;
  QueuePair& qp = owner(qpx);
  if (count > qp.attr().cap.max_send_sge || (count > 0 && list == nullptr)) {
    fail_batch(qp.wr_batch, EINVAL);
    return;
  }
  std::vector<ibv_sge>& sges = owner(qpx).wr_batch.sges.back();
  sges.assign(list, list + count);
  wr->sg_list = sges.data();
  wr->num_sge = static_cast<int>(count);
}

void wr_set_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
  Lock guard = enter_device();
  const ibv_sge sge{addr, length, lkey};
  set_sges(qpx, &sge, 1);
}

void wr_set_sge_list(ibv_qp_ex* qpx, size_t num_sge, const ibv_sge* sg_list) {
  Lock guard = enter_device();
  set_sges(qpx, sg_list, num_sge);
}

// Inline data is copied now (ibv_wr_post(3): "the caller can immediately
// re-use the buffer"), then posted as an IBV_SEND_INLINE WR.
void set_inline(ibv_qp_ex* qpx, const ibv_data_buf* buffers, std::size_t count) {
  ibv_send_wr* wr = last_wr(qpx);
  if (wr == nullptr) return;
  WrBatch& batch = owner(qpx).wr_batch;
  std::vector<uint8_t>& bytes = batch.inlined.back();
  bytes.clear();
  for (std::size_t i = 0; i < count; ++i) {
    const auto* p = static_cast<const uint8_t*>(buffers[i].addr);
    bytes.insert(bytes.end(), p, p + buffers[i].length);
  }
  const ibv_sge sge{reinterpret_cast<uintptr_t>(bytes.data()), static_cast<uint32_t>(bytes.size()),
                    0};
  set_sges(qpx, &sge, 1);
  wr->send_flags |= IBV_SEND_INLINE;
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) {
  Lock guard = enter_device();
  const ibv_data_buf buffer{addr, length};
  set_inline(qpx, &buffer, 1);
}

void wr_set_inline_data_list(ibv_qp_ex* qpx, size_t num_buf, const ibv_data_buf* buf_list) {
  Lock guard = enter_device();
  set_inline(qpx, buf_list, num_buf);
}

void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  Lock guard = enter_device();
  if (ibv_send_wr* wr = last_wr(qpx)) {
    wr->wr.ud.ah = ah;
    wr->wr.ud.remote_qpn = remote_qpn;
    wr->wr.ud.remote_qkey = remote_qkey;
  }
}

void install_post_api(ibv_qp_ex* qpx) {
  qpx->comp_mask = 0;
  qpx->wr_start = wr_start;
  qpx->wr_complete = wr_complete;
  qpx->wr_abort = wr_abort;
  qpx->wr_send = wr_send;
  qpx->wr_send_imm = wr_send_imm;
  qpx->wr_rdma_write = wr_rdma_write;
  qpx->wr_rdma_write_imm = wr_rdma_write_imm;
  qpx->wr_rdma_read = wr_rdma_read;
  qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
  qpx->wr_set_sge = wr_set_sge;
  qpx->wr_set_sge_list = wr_set_sge_list;
  qpx->wr_set_inline_data = wr_set_inline_data;
  qpx->wr_set_inline_data_list = wr_set_inline_data_list;
  qpx->wr_set_ud_addr = wr_set_ud_addr;
  qpx->wr_send_inv = wr_send_inv;
  qpx->wr_local_inv = wr_local_inv;
  qpx->wr_bind_mw = wr_bind_mw;
  // TSO, XRC: not simulated, and creation refuses a QP that asks for them,
  // so these stay NULL.
}

ibv_qp* refuse(int error) {
  errno = error;
  return nullptr;
}

}  // namespace

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  if (attr == nullptr) return refuse(EINVAL);
  const uint32_t known =
      IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;
  if (attr->comp_mask & ~known) return refuse(EOPNOTSUPP);
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0)
    return refuse(EOPNOTSUPP);
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr ||
      !Context::same(attr->pd->context, context))
    return refuse(EINVAL);
  const uint64_t send_ops =
      (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ? attr->send_ops_flags : 0;
  // ibv_wr_post(3): creation fails when the QP cannot do every operation asked for.
  if (send_ops & ~allowed_send_ops(attr->qp_type)) return refuse(EOPNOTSUPP);
  ibv_qp_init_attr init{};
  init.qp_context = attr->qp_context;
  init.send_cq = attr->send_cq;
  init.recv_cq = attr->recv_cq;
  init.srq = attr->srq;
  init.cap = attr->cap;
  init.qp_type = attr->qp_type;
  init.sq_sig_all = attr->sq_sig_all;
  ibv_qp* qp = create_qp(attr->pd, &init);
  if (qp == nullptr) return nullptr;
  attr->cap = init.cap;
  if (send_ops != 0) {
    Lock guard = enter_device();
    QueuePair* owner = QueuePair::from(qp);
    owner->send_ops_flags = send_ops;
    install_post_api(owner->verbs_ex());
  }
  return qp;
}

}  // namespace verbfault::sim

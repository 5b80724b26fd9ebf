#include "extended_cq.h"

#include "completion_queue.h"
#include "fabric.h"
#include "verbfault/sim/provider.h"

#include <cerrno>
#include <mutex>

namespace verbfault::sim {

namespace {

constexpr uint64_t kSupportedWcFlags =
    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS;

CompletionQueue& queue(ibv_cq_ex* cq) {
  return *CompletionQueue::from(ibv_cq_ex_to_cq(cq));
}

// The completion start_poll/next_poll made current. Between start_poll and
// end_poll the CQ is the caller's (ibv_create_cq_ex(3): the poll API is not
// thread safe per CQ unless the caller serializes it), so the accessors
// read it without the fabric lock.
const ibv_wc& current(ibv_cq_ex* cq) {
  return queue(cq).ex_current;
}

// Takes the next completion into ex_current: 0, ENOENT when the CQ is
// empty, EIO when it is in error.
int take_next(ibv_cq_ex* cq) {
  auto guard = Fabric::enter();
  Fabric& fabric = Fabric::get();
  CompletionQueue& q = queue(cq);
  int polled = q.poll(1, &q.ex_current);
  // An empty poll lets virtual time move on, as ibv_poll_cq does.
  if (polled == 0 && fabric.advance_clock()) polled = q.poll(1, &q.ex_current);
  if (polled < 0) return -polled;
  if (polled == 0) return ENOENT;
  cq->wr_id = q.ex_current.wr_id;
  cq->status = q.ex_current.status;
  return 0;
}

int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr == nullptr || attr->comp_mask != 0) return EINVAL;
  return take_next(cq);
}
int next_poll(ibv_cq_ex* cq) {
  return take_next(cq);
}
void end_poll(ibv_cq_ex*) {}

ibv_wc_opcode read_opcode(ibv_cq_ex* cq) {
  return current(cq).opcode;
}
uint32_t read_vendor_err(ibv_cq_ex* cq) {
  return current(cq).vendor_err;
}
uint32_t read_byte_len(ibv_cq_ex* cq) {
  return current(cq).byte_len;
}
__be32 read_imm_data(ibv_cq_ex* cq) {
  return current(cq).imm_data;
}
uint32_t read_qp_num(ibv_cq_ex* cq) {
  return current(cq).qp_num;
}
uint32_t read_src_qp(ibv_cq_ex* cq) {
  return current(cq).src_qp;
}
unsigned int read_wc_flags(ibv_cq_ex* cq) {
  return current(cq).wc_flags;
}
uint32_t read_slid(ibv_cq_ex* cq) {
  return current(cq).slid;
}
uint8_t read_sl(ibv_cq_ex* cq) {
  return current(cq).sl;
}
uint8_t read_dlid_path_bits(ibv_cq_ex* cq) {
  return current(cq).dlid_path_bits;
}

}  // namespace

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  if (attr == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  const uint32_t known_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
  const uint32_t known_flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
  if ((attr->wc_flags & ~kSupportedWcFlags) != 0 || (attr->comp_mask & ~known_mask) != 0 ||
      ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (attr->flags & ~known_flags) != 0)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ibv_cq* plain = create_cq(context, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                            static_cast<int>(attr->comp_vector));
  if (plain == nullptr) return nullptr;
  // Not yet visible to any other thread: no lock needed to fill it in.
  ibv_cq_ex* cq = reinterpret_cast<ibv_cq_ex*>(plain);  // allocated as one
  cq->comp_mask = 0;
  cq->start_poll = start_poll;
  cq->next_poll = next_poll;
  cq->end_poll = end_poll;
  cq->read_opcode = read_opcode;
  cq->read_vendor_err = read_vendor_err;
  cq->read_wc_flags = read_wc_flags;
  // Only the accessors of the fields asked for (ibv_create_cq_ex(3)).
  const uint64_t flags = attr->wc_flags;
  if (flags & IBV_WC_EX_WITH_BYTE_LEN) cq->read_byte_len = read_byte_len;
  if (flags & IBV_WC_EX_WITH_IMM) cq->read_imm_data = read_imm_data;
  if (flags & IBV_WC_EX_WITH_QP_NUM) cq->read_qp_num = read_qp_num;
  if (flags & IBV_WC_EX_WITH_SRC_QP) cq->read_src_qp = read_src_qp;
  if (flags & IBV_WC_EX_WITH_SLID) cq->read_slid = read_slid;
  if (flags & IBV_WC_EX_WITH_SL) cq->read_sl = read_sl;
  if (flags & IBV_WC_EX_WITH_DLID_PATH_BITS) cq->read_dlid_path_bits = read_dlid_path_bits;
  return cq;
}

}  // namespace verbfault::sim

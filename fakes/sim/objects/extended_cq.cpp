#include "extended_cq.h"

#include "completion_queue.h"
#include "context.h"
#include "fabric.h"
#include "fabric_poll.h"
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
  // As ibv_poll_cq (provider.cpp): deliveries from another process, the
  // virtual clock, and an empty poll is no call the peers see.
  Fabric& fabric = process_fabric();
  auto guard = fabric.enter(Fabric::Call::uncounted);
  CompletionQueue& q = queue(cq);
  const int polled = poll_from_fabric(guard, q, 1, &q.ex_current);
  if (polled != 0) fabric.count_call();
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

// ibv_wc_read_*: a field of the current completion, as the accessor types it.
template <auto Field, class Result>
Result read(ibv_cq_ex* cq) {
  return static_cast<Result>(current(cq).*Field);
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
  cq->read_opcode = read<&ibv_wc::opcode, ibv_wc_opcode>;
  cq->read_vendor_err = read<&ibv_wc::vendor_err, uint32_t>;
  cq->read_wc_flags = read<&ibv_wc::wc_flags, unsigned int>;
  // Only the accessors of the fields asked for (ibv_create_cq_ex(3)).
  const uint64_t flags = attr->wc_flags;
  if (flags & IBV_WC_EX_WITH_BYTE_LEN) cq->read_byte_len = read<&ibv_wc::byte_len, uint32_t>;
  if (flags & IBV_WC_EX_WITH_IMM) cq->read_imm_data = read<&ibv_wc::imm_data, __be32>;
  if (flags & IBV_WC_EX_WITH_QP_NUM) cq->read_qp_num = read<&ibv_wc::qp_num, uint32_t>;
  if (flags & IBV_WC_EX_WITH_SRC_QP) cq->read_src_qp = read<&ibv_wc::src_qp, uint32_t>;
  if (flags & IBV_WC_EX_WITH_SLID) cq->read_slid = read<&ibv_wc::slid, uint32_t>;
  if (flags & IBV_WC_EX_WITH_SL) cq->read_sl = read<&ibv_wc::sl, uint8_t>;
  if (flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
    cq->read_dlid_path_bits = read<&ibv_wc::dlid_path_bits, uint8_t>;
  return cq;
}

}  // namespace verbfault::sim

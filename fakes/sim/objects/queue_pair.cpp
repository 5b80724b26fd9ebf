#include "queue_pair.h"

#include "address_handle.h"
#include "completion_queue.h"
#include "context.h"
#include "device.h"
#include "fabric.h"
#include "invariant.h"
#include "protection_domain.h"
#include "qp_state_machine.h"
#include "shared_receive_queue.h"
#include "transport.h"

#include <cerrno>
#include <cstring>

namespace verbfault::sim {

namespace {

// `opcode`: the raw value of the WR's opcode field (raw_value): the
// application may have put anything there (ibv_post_send(3): EINVAL).
bool opcode_allowed(ibv_qp_type type, uint32_t opcode) {
  switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
      return true;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:  // ibv_wr_post(3): these three on UC and RC
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV:
      return type == IBV_QPT_RC || type == IBV_QPT_UC;
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return type == IBV_QPT_RC;
    default:
      return false;  // TSO, LSO, fast registration: not simulated
  }
}

bool is_atomic(ibv_wr_opcode opcode) {
  return opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// IBV_WR_BIND_MW and IBV_WR_LOCAL_INV carry no data: what the requester
// needs of them (memory_window.h), copied (the application may reuse its
// WR and free the window or MR at once; the WQE then fails).
void take_local_operation(const ibv_send_wr& wr, SendWqe& wqe) {
  if (wr.opcode == IBV_WR_LOCAL_INV) return;  // its rkey is taken with SEND_WITH_INV's
  const ibv_mw_bind_info& info = wr.bind_mw.bind_info;
  wqe.rkey = wr.bind_mw.rkey;
  wqe.mw_rkey = wr.bind_mw.mw->rkey;
  wqe.bind_lkey = info.mr != nullptr ? info.mr->lkey : 0;
  wqe.bind_addr = info.addr;
  wqe.bind_length = info.length;
  wqe.bind_access = info.mw_access_flags;
}

uint32_t mtu_bytes(ibv_mtu mtu) {
  return 128u << static_cast<int>(mtu);
}

}  // namespace

QueuePair::QueuePair(ProtectionDomain& pd, const ibv_qp_init_attr& init, uint32_t qpn)
    : pd_(pd),
      init_(init),
      qpn_(qpn),
      type_(init.qp_type),
      send_cq_(CompletionQueue::from(init.send_cq)),
      recv_cq_(CompletionQueue::from(init.recv_cq)),
      srq_(init.srq ? SharedReceiveQueue::from(init.srq) : nullptr) {
  handle_.owner = this;
  ibv_qp& qp = handle_.verbs.qp_base;
  qp.context = pd.verbs()->context;
  qp.qp_context = init.qp_context;
  qp.pd = pd.verbs();
  qp.send_cq = init.send_cq;
  qp.recv_cq = init.recv_cq;
  qp.srq = init.srq;
  qp.handle = qpn;
  qp.qp_num = qpn;
  qp.state = IBV_QPS_RESET;
  qp.qp_type = type_;
  pthread_mutex_init(&qp.mutex, nullptr);
  pthread_cond_init(&qp.cond, nullptr);
  attr_.qp_state = IBV_QPS_RESET;
  attr_.cur_qp_state = IBV_QPS_RESET;
  attr_.path_mtu = IBV_MTU_1024;
  attr_.cap = init.cap;
  attr_.sq_draining = 0;
}

Context& QueuePair::context() {
  return pd_.context();
}

Fabric& QueuePair::fabric() {
  return pd_.context().fabric();
}

int QueuePair::modify(const ibv_qp_attr& attr, int mask) {
  const ibv_qp_state current = attr_.qp_state;
  // The enum fields the application gave are read as integers and checked
  // before they are used as the enums (ibv_modify_qp(3): EINVAL).
  if ((mask & IBV_QP_CUR_STATE) && raw_value(attr.cur_qp_state) != current) return EINVAL;
  const uint32_t state =
      (mask & IBV_QP_STATE) ? raw_value(attr.qp_state) : static_cast<uint32_t>(current);
  if (state > IBV_QPS_ERR) return EINVAL;
  const auto target = static_cast<ibv_qp_state>(state);
  if ((mask & IBV_QP_PATH_MIG_STATE) && raw_value(attr.path_mig_state) > IBV_MIG_ARMED)
    return EINVAL;
  if (int err = check_qp_modify(type_, current, target, mask)) return err;

  // Attribute values (ibv_modify_qp(3), ibv_query_device(3) limits).
  const Device& device = context().device();
  const ibv_device_attr& limits = device.profile().device;
  const ibv_port_attr& port = device.profile().port;
  if ((mask & IBV_QP_PORT) && attr.port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index >= port.pkey_tbl_len) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) &&
      (raw_value(attr.path_mtu) < IBV_MTU_256 || raw_value(attr.path_mtu) > IBV_MTU_4096))
    return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > limits.max_qp_init_rd_atom)
    return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > limits.max_qp_rd_atom)
    return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) && attr.timeout > 31) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && attr.rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_DEST_QPN) && attr.dest_qp_num > 0xffffff) return EINVAL;
  if ((mask & IBV_QP_RQ_PSN) && attr.rq_psn > 0xffffff) return EINVAL;
  if ((mask & IBV_QP_SQ_PSN) && attr.sq_psn > 0xffffff) return EINVAL;
  if ((mask & IBV_QP_AV) && !device.valid_address(attr.ah_attr)) return EINVAL;

  apply(attr, mask);
  if (!(mask & IBV_QP_STATE) || target == current) return 0;

  attr_.qp_state = target;
  attr_.cur_qp_state = target;
  VERBFAULT_ASSERT(target >= IBV_QPS_RESET && target <= IBV_QPS_ERR,
                   "a QP is in one of the states of IBA 10.3.1");
  switch (target) {
    case IBV_QPS_RESET:
      // IBA 10.3.1: RESET empties both work queues without completions.
      fabric().unschedule(this);
      sq_.clear();
      rq_.clear();
      sq_released_ = sq_next_seq_;
      // Its completions leave its CQs, as rdma-core's mlx4/mlx5 providers
      // clean them (mlx5_cq_clean at the modify to RESET): a QP restarted
      // from RESET must not find an old flush at the head of its CQ
      // (rdma-core's tests/test_mr.py restate_qps relies on it). Their
      // slots were freed just above.
      send_cq_->remove(*this);
      if (recv_cq_ != send_cq_) recv_cq_->remove(*this);
      communication_established = false;
      last_wqe_reached = false;
      break;
    case IBV_QPS_ERR:
      completer::flush(*this);
      break;
    case IBV_QPS_SQD:
      // Nothing is ever in flight between calls: the send queue is drained
      // at once (IBA 10.3.1 "SQ Drain").
      attr_.sq_draining = 0;
      if ((mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) && attr.en_sqd_async_notify) {
        ibv_async_event event{};
        event.element.qp = verbs();
        event.event_type = IBV_EVENT_SQ_DRAINED;
        context().raise(event);
      }
      break;
    case IBV_QPS_RTS:
      requester::progress(*this);  // resume after SQD / SQE
      break;
    default:
      break;
  }
  return 0;
}

void QueuePair::apply(const ibv_qp_attr& attr, int mask) {
  if (mask & IBV_QP_PKEY_INDEX) attr_.pkey_index = attr.pkey_index;
  if (mask & IBV_QP_PORT) attr_.port_num = attr.port_num;
  if (mask & IBV_QP_QKEY) attr_.qkey = attr.qkey;
  if (mask & IBV_QP_ACCESS_FLAGS) attr_.qp_access_flags = attr.qp_access_flags;
  if (mask & IBV_QP_AV) attr_.ah_attr = attr.ah_attr;
  if (mask & IBV_QP_ALT_PATH) {
    attr_.alt_ah_attr = attr.alt_ah_attr;
    attr_.alt_pkey_index = attr.alt_pkey_index;
    attr_.alt_port_num = attr.alt_port_num;
    attr_.alt_timeout = attr.alt_timeout;
  }
  if (mask & IBV_QP_PATH_MTU) attr_.path_mtu = attr.path_mtu;
  if (mask & IBV_QP_TIMEOUT) attr_.timeout = attr.timeout;
  if (mask & IBV_QP_RETRY_CNT) attr_.retry_cnt = attr.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) attr_.rnr_retry = attr.rnr_retry;
  if (mask & IBV_QP_RQ_PSN) attr_.rq_psn = expected_psn = attr.rq_psn;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) attr_.max_rd_atomic = attr.max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) attr_.min_rnr_timer = attr.min_rnr_timer;
  if (mask & IBV_QP_SQ_PSN) attr_.sq_psn = next_psn = attr.sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) attr_.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (mask & IBV_QP_PATH_MIG_STATE) attr_.path_mig_state = attr.path_mig_state;
  if (mask & IBV_QP_DEST_QPN) attr_.dest_qp_num = attr.dest_qp_num;
  if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) attr_.en_sqd_async_notify = attr.en_sqd_async_notify;
}

void QueuePair::enter_error() {
  if (attr_.qp_state == IBV_QPS_ERR) return;
  attr_.qp_state = IBV_QPS_ERR;
  attr_.cur_qp_state = IBV_QPS_ERR;
  completer::flush(*this);
}

void QueuePair::send_queue_failed() {
  if (type_ == IBV_QPT_RC) {
    enter_error();
    return;
  }
  if (attr_.qp_state != IBV_QPS_RTS && attr_.qp_state != IBV_QPS_SQD) return;
  attr_.qp_state = IBV_QPS_SQE;
  attr_.cur_qp_state = IBV_QPS_SQE;
  completer::flush(*this);
}

int QueuePair::check_send_wr(const ibv_send_wr& wr) {
  // The opcode is looked at as the enum only once it is known to be one.
  if (!opcode_allowed(type_, raw_value(wr.opcode))) return EINVAL;
  if (wr.opcode == IBV_WR_BIND_MW) {
    // ibv_post_send(3): a bind names its window; a binding without an MR
    // has no range (libibverbs' ibv_bind_mw check).
    const ibv_mw_bind_info& info = wr.bind_mw.bind_info;
    if (wr.bind_mw.mw == nullptr) return EINVAL;
    if (info.mr == nullptr && (info.addr != 0 || info.length != 0)) return EINVAL;
    return 0;
  }
  if (wr.opcode == IBV_WR_LOCAL_INV) return 0;  // no data: the SGEs are not looked at
  // ibv_create_qp(3): max_send_sge bounds every send WR, inline or not;
  // checked before sg_list is read, which may hold fewer entries.
  if (!sge_count_fits(wr.num_sge, wr.sg_list, attr_.cap.max_send_sge)) return EINVAL;
  uint64_t length = 0;
  for (int i = 0; i < wr.num_sge; ++i) length += wr.sg_list[i].length;
  if (wr.send_flags & IBV_SEND_INLINE) {
    if (length > attr_.cap.max_inline_data) return EINVAL;
    if (wr.opcode == IBV_WR_RDMA_READ || is_atomic(wr.opcode)) return EINVAL;
  }
  if (is_atomic(wr.opcode) && (wr.num_sge != 1 || length != 8)) return EINVAL;
  if (type_ == IBV_QPT_UD) {
    if (wr.wr.ud.ah == nullptr) return EINVAL;
    // A UD message is one packet (IBA 9.8.3): at most the path MTU.
    if (length > mtu_bytes(context().device().port().active_mtu)) return EINVAL;
  }
  return 0;
}

int QueuePair::check_send_list(const ibv_send_wr* list) {
  const ibv_qp_state state = attr_.qp_state;
  if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR) return EINVAL;
  uint64_t used = sq_next_seq_ - sq_released_;
  for (const ibv_send_wr* wr = list; wr != nullptr; wr = wr->next) {
    if (int err = check_send_wr(*wr)) return err;
    if (used++ >= attr_.cap.max_send_wr) return ENOMEM;
  }
  return 0;
}

int QueuePair::post_send(ibv_send_wr* wr, ibv_send_wr** bad_wr,
                         const std::vector<SendWqe::Forced>* forced) {
  std::size_t index = 0;
  const ibv_qp_state state = attr_.qp_state;
  if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR) {
    *bad_wr = wr;
    return EINVAL;
  }
  for (; wr != nullptr; wr = wr->next, ++index) {
    int err = check_send_wr(*wr);
    if (err == 0 && sq_next_seq_ - sq_released_ >= attr_.cap.max_send_wr) err = ENOMEM;
    if (err != 0) {
      *bad_wr = wr;
      requester::progress(*this);
      return err;
    }
    SendWqe wqe;
    wqe.seq = sq_next_seq_++;
    VERBFAULT_ASSERT(
        sq_next_seq_ - sq_released_ <= attr_.cap.max_send_wr,
        "a send queue holds at most max_send_wr WRs (ibv_post_send(3): ENOMEM beyond)");
    wqe.wr_id = wr->wr_id;
    wqe.opcode = wr->opcode;
    wqe.send_flags = wr->send_flags;
    wqe.signaled = init_.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
    wqe.imm_data = wr->imm_data;
    const bool local_operation = wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV;
    if (!local_operation)
      for (int i = 0; i < wr->num_sge; ++i) wqe.length += wr->sg_list[i].length;
    if (local_operation) {
      take_local_operation(*wr, wqe);
    } else if (wr->send_flags & IBV_SEND_INLINE) {
      // The buffers may be reused as soon as the call returns.
      wqe.inline_data.reserve(wqe.length);
      for (int i = 0; i < wr->num_sge; ++i) {
        const auto* p = reinterpret_cast<const uint8_t*>(wr->sg_list[i].addr);
        wqe.inline_data.insert(wqe.inline_data.end(), p, p + wr->sg_list[i].length);
      }
    } else {
      wqe.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    }
    if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
        wr->opcode == IBV_WR_RDMA_READ) {
      wqe.remote_addr = wr->wr.rdma.remote_addr;
      wqe.rkey = wr->wr.rdma.rkey;
    } else if (is_atomic(wr->opcode)) {
      wqe.remote_addr = wr->wr.atomic.remote_addr;
      wqe.rkey = wr->wr.atomic.rkey;
      wqe.compare_add = wr->wr.atomic.compare_add;
      wqe.swap = wr->wr.atomic.swap;
    } else if (wr->opcode == IBV_WR_SEND_WITH_INV || wr->opcode == IBV_WR_LOCAL_INV) {
      wqe.rkey = wr->invalidate_rkey;
    }
    if (type_ == IBV_QPT_UD) {
      wqe.ah = AddressHandle::from(wr->wr.ud.ah)->attr();
      wqe.remote_qpn = wr->wr.ud.remote_qpn;
      wqe.remote_qkey = wr->wr.ud.remote_qkey;
    }
    if (forced != nullptr && index < forced->size()) wqe.forced = (*forced)[index];
    sq_.push_back(std::move(wqe));
  }
  requester::progress(*this);
  return 0;
}

int QueuePair::post_recv(ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (srq_ != nullptr || attr_.qp_state == IBV_QPS_RESET) {
    *bad_wr = wr;
    return EINVAL;
  }
  if (int err = rq_.post(wr, bad_wr, attr_.cap.max_recv_wr, attr_.cap.max_recv_sge)) return err;
  // A receive posted to a QP in ERR is completed at once with a flush
  // (IBA 10.3.1 Error state: WRs posted in ERR complete in error).
  if (attr_.qp_state == IBV_QPS_ERR) completer::flush(*this);
  return 0;
}

}  // namespace verbfault::sim

#include "shared_receive_queue.h"

#include "context.h"
#include "protection_domain.h"

#include <cerrno>

namespace verbfault::sim {

SharedReceiveQueue::SharedReceiveQueue(ProtectionDomain& pd, const ibv_srq_attr& attr)
    : pd_(pd), attr_(attr) {
  handle_.owner = this;
  ibv_srq& srq = handle_.verbs;
  srq.context = pd.verbs()->context;
  srq.pd = pd.verbs();
  pthread_mutex_init(&srq.mutex, nullptr);
  pthread_cond_init(&srq.cond, nullptr);
}

int SharedReceiveQueue::post(ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (!sge_count_fits(wr->num_sge, wr->sg_list, attr_.max_sge))
      err = EINVAL;
    else if (occupied_ >= attr_.max_wr)
      err = ENOMEM;
    if (err != 0) {
      *bad_wr = wr;
      return err;
    }
    RecvWqe wqe;
    wqe.wr_id = wr->wr_id;
    wqe.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    for (const ibv_sge& sge : wqe.sges) wqe.capacity += sge.length;
    queue_.push_back(std::move(wqe));
    ++occupied_;
  }
  return 0;
}

std::optional<RecvWqe> SharedReceiveQueue::take() {
  if (queue_.empty()) return std::nullopt;
  RecvWqe wqe = std::move(queue_.front());
  queue_.pop_front();
  // ibv_modify_srq(3): the limit event fires once when the number of WRs
  // drops below srq_limit, and disarms the limit.
  if (attr_.srq_limit != 0 && queue_.size() < attr_.srq_limit) {
    attr_.srq_limit = 0;
    ibv_async_event event{};
    event.element.srq = verbs();
    event.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
    Context::from(handle_.verbs.context)->raise(event);
  }
  return wqe;
}

}  // namespace verbfault::sim

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
  return queue_.post(wr, bad_wr, attr_.max_wr, attr_.max_sge);
}

std::optional<RecvWqe> SharedReceiveQueue::take() {
  Ring<RecvWqe>& wqes = queue_.wqes();
  if (wqes.empty()) return std::nullopt;
  RecvWqe wqe = std::move(wqes.front());
  wqes.pop_front();
  // ibv_modify_srq(3): the limit event fires once when the number of WRs
  // drops below srq_limit, and disarms the limit.
  if (attr_.srq_limit != 0 && wqes.size() < attr_.srq_limit) {
    attr_.srq_limit = 0;
    ibv_async_event event{};
    event.element.srq = verbs();
    event.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
    Context::from(handle_.verbs.context)->raise(event);
  }
  return wqe;
}

}  // namespace verbfault::sim

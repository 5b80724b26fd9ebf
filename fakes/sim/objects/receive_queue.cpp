#include "receive_queue.h"

#include "invariant.h"

#include <cerrno>

namespace verbfault::sim {

int ReceiveQueue::post(ibv_recv_wr* wr, ibv_recv_wr** bad_wr, std::uint32_t max_wr,
                       std::uint32_t max_sge) {
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (!sge_count_fits(wr->num_sge, wr->sg_list, max_sge))
      err = EINVAL;
    else if (occupied_ >= max_wr)
      err = ENOMEM;
    if (err != 0) {
      *bad_wr = wr;
      return err;
    }
    RecvWqe wqe;
    wqe.wr_id = wr->wr_id;
    wqe.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    for (const ibv_sge& sge : wqe.sges) wqe.capacity += sge.length;
    wqes_.push_back(std::move(wqe));
    ++occupied_;
    VERBFAULT_ASSERT(occupied_ <= max_wr,
                     "a receive queue holds at most max_wr WRs (ibv_post_recv(3): ENOMEM beyond)");
  }
  return 0;
}

}  // namespace verbfault::sim

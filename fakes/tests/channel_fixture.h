// A connected RC pair whose CQs report to one completion channel, for the
// completion-event tests (ibv_req_notify_cq(3), ibv_get_cq_event(3)). Drives
// the simulated device through <infiniband/verbs.h> only.
#pragma once

#include "verbs_fixture.h"

#include <fcntl.h>
#include <poll.h>

namespace verbfault::testing {

class ChannelRcPair : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    channel_ = ibv_create_comp_channel(ctx_);
    ASSERT_NE(channel_, nullptr);
    cq_a_ = ibv_create_cq(ctx_, 64, &tag_a_, channel_, 0);
    cq_b_ = ibv_create_cq(ctx_, 64, &tag_b_, channel_, 0);
    ASSERT_NE(cq_a_, nullptr);
    ASSERT_NE(cq_b_, nullptr);
    a_ = create_qp(IBV_QPT_RC, cq_a_, cq_a_);
    b_ = create_qp(IBV_QPT_RC, cq_b_, cq_b_);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_EQ(connect(a_, b_->qp_num, lid()), 0);
    ASSERT_EQ(connect(b_, a_->qp_num, lid()), 0);
    mr_a_ = reg(buf_a_, sizeof buf_a_);
    mr_b_ = reg(buf_b_, sizeof buf_b_);
    ASSERT_NE(mr_a_, nullptr);
    ASSERT_NE(mr_b_, nullptr);
  }

  // poll(2) on the channel fd: true when it reports POLLIN within timeout_ms.
  bool readable(int timeout_ms = 0) const {
    pollfd p{channel_->fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
  }

  void set_nonblocking() {
    const int flags = fcntl(channel_->fd, F_GETFL);
    ASSERT_GE(flags, 0);
    ASSERT_EQ(fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK), 0);
  }

  // A signaled 8-byte RDMA WRITE from a_ to b_: one completion on cq_a_,
  // none on cq_b_.
  int write_a_to_b(uint64_t wr_id, unsigned flags = IBV_SEND_SIGNALED) {
    return post_send(a_, IBV_WR_RDMA_WRITE, wr_id, mr_a_, buf_a_, 8, flags,
                     reinterpret_cast<uintptr_t>(buf_b_), mr_b_->rkey);
  }

  // Takes one event in non-blocking mode: the CQ it names, or nullptr with
  // errno EAGAIN when none is pending. Puts the fd in O_NONBLOCK mode.
  ibv_cq* try_get_event(void** context_out = nullptr) {
    set_nonblocking();
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    errno = 0;
    if (ibv_get_cq_event(channel_, &cq, &context) != 0) return nullptr;
    if (context_out != nullptr) *context_out = context;
    return cq;
  }

  ibv_comp_channel* channel_ = nullptr;
  int tag_a_ = 0;  // the cq_context of cq_a_ is &tag_a_
  int tag_b_ = 0;
  ibv_cq* cq_a_ = nullptr;
  ibv_cq* cq_b_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
  alignas(64) uint8_t buf_a_[4096] = {};
  alignas(64) uint8_t buf_b_[4096] = {};
  ibv_mr* mr_a_ = nullptr;
  ibv_mr* mr_b_ = nullptr;
};

}  // namespace verbfault::testing

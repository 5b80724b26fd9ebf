// A connected RC pair whose CQs report to one completion channel, for the
// completion-event tests (ibv_req_notify_cq(3), ibv_get_cq_event(3)). Drives
// the simulated device through <infiniband/verbs.h> only.
#pragma once

#include "verbs_fixture.h"

#include <fcntl.h>
#include <poll.h>

namespace verbfault::testing {

class ChannelRcPair : public RcPair {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    channel_ = ibv_create_comp_channel(ctx_);
    ASSERT_NE(channel_, nullptr);
    build_pair(channel_, &tag_a_, &tag_b_);
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
};

}  // namespace verbfault::testing

// What the application gets wrong in a work request, through the harness:
// the checks, the trace and the fault engine read no more of a WR than the
// provider may (a num_sge over the queue's limit with a shorter sg_list, no
// sg_list).
#include "fault_fixture.h"
#include "guard_page.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace verbfault::testing {
namespace {

using MalformedRequests = FaultPair;

constexpr int kHugeNumSge = 1 << 20;

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

TEST_F(MalformedRequests, ASendWithNumSgeOverTheLimitIsRefusedAndNothingPastItsListIsRead) {
  // A rule, so that the fault engine decides each posted WR too.
  begin("flush qp#0 nth=100");
  GuardedArray guarded(4096);
  ibv_sge* sge = guarded.at_end<ibv_sge>();
  *sge = {addr_of(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 5;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = sge;
  wr.num_sge = kHugeNumSge;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  wr.sg_list = nullptr;
  wr.num_sge = 1;
  bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST_F(MalformedRequests, AReceiveWithNumSgeOverTheLimitIsRefusedAndNothingPastItsListIsRead) {
  begin("flush qp#1 nth=100");
  GuardedArray guarded(4096);
  ibv_sge* sge = guarded.at_end<ibv_sge>();
  *sge = {addr_of(buf_b_), 8, mr_b_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = 6;
  wr.sg_list = sge;
  wr.num_sge = kHugeNumSge;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_recv(b_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  wr.sg_list = nullptr;
  wr.num_sge = 1;
  bad = nullptr;
  EXPECT_EQ(ibv_post_recv(b_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST_F(MalformedRequests, ASrqReceiveWithNumSgeOverTheLimitIsRefused) {
  begin("");
  ibv_srq_init_attr init{};
  init.attr.max_wr = 4;
  init.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &init);
  ASSERT_NE(srq, nullptr);
  GuardedArray guarded(4096);
  ibv_sge* sge = guarded.at_end<ibv_sge>();
  *sge = {addr_of(buf_b_), 8, mr_b_->lkey};
  ibv_recv_wr wr{};
  wr.sg_list = sge;
  wr.num_sge = kHugeNumSge;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

}  // namespace
}  // namespace verbfault::testing

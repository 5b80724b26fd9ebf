// What the application gets wrong in a work request, through the harness:
// the checks, the trace and the fault engine read no more of a WR than the
// provider may (a num_sge over the queue's limit with a shorter sg_list, no
// sg_list), load no enum field that holds no enumerator (an opcode of
// 0x7f, a qp_state of 99), and take the queue of an error completion from
// what they know of the WR, not from its undefined opcode (ibv_poll_cq(3)).
#include "fault_fixture.h"
#include "guard_page.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

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

// ibv_post_send(3): an opcode the device does not know is EINVAL. The
// harness records and checks the WR without loading 0x7f as an
// ibv_wr_opcode (undefined behaviour: UBSan's -fsanitize=enum stops here).
TEST_F(MalformedRequests, AnUnknownOpcodeIsEinvalThroughTheHarness) {
  begin("flush qp#0 nth=100");
  ibv_sge sge{addr_of(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 9;
  const std::uint32_t unknown = 0x7f;
  std::memcpy(&wr.opcode, &unknown, sizeof unknown);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(records_with("\"ret\":22"), 1u);
}

// ibv_modify_qp(3): a state that is none of enum ibv_qp_state is EINVAL,
// and the QP stays as it was.
TEST_F(MalformedRequests, AnUnknownQpStateIsEinvalThroughTheHarness) {
  begin("");
  ibv_qp_attr attr{};
  const std::uint32_t unknown = 99;
  std::memcpy(&attr.qp_state, &unknown, sizeof unknown);
  EXPECT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE), EINVAL);
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
}

// ibv_poll_cq(3): the opcode of an error completion is undefined (the
// device leaves 0xa5a5a5a5 there, which has IBV_WC_RECV's bit). A send the
// device flushes is still the send an injected error waits for: the
// harness knows which queue its WR went to.
TEST_F(MalformedRequests, AnInjectedErrorOnASendTheDeviceFlushesIsThatError) {
  begin("completion_error(rem_access_err) qp#0 nth=1");
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE), 0);
  ASSERT_EQ(send_a_to_b(7), 0);  // posted in ERR: flushed
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(session_->fired()[0], 1u);
}

// The same with a QP whose send and receive queues complete into different
// CQs: the CQ says which queue a completion is from.
TEST_F(MalformedRequests, AnInjectedErrorOnAFlushedSendIsFoundByItsCq) {
  begin("completion_error(rem_access_err) qp#2 opcode=send nth=1");
  ibv_cq* send_cq = ibv_create_cq(ctx_, 8, nullptr, nullptr, 0);
  ibv_cq* recv_cq = ibv_create_cq(ctx_, 8, nullptr, nullptr, 0);
  ASSERT_TRUE(send_cq && recv_cq);
  ibv_qp* qp = create_qp(IBV_QPT_RC, send_cq, recv_cq);
  ASSERT_NE(qp, nullptr);
  ASSERT_EQ(rc_connect(qp, {.dest_qp_num = b_->qp_num, .dlid = lid(), .grh = grh()}), 0);
  // A receive with the same wr_id, flushed too: it stays a flush.
  ASSERT_EQ(post_recv(qp, 7, mr_a_, buf_a_, 64), 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
  ASSERT_EQ(post_send(qp, IBV_WR_SEND, 7, mr_a_, buf_a_, 8), 0);
  auto sent = poll(send_cq, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_REM_ACCESS_ERR);
  auto received = poll(recv_cq, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(send_cq), 0);
  EXPECT_EQ(ibv_destroy_cq(recv_cq), 0);
}

}  // namespace
}  // namespace verbfault::testing

// Selectors through a Session on the simulated device: a rule reaches only
// the objects and work requests its fields name (qp#0 sends to qp#1).
#include "fault_fixture.h"

#include <gtest/gtest.h>

#include <vector>

namespace verbfault::testing {
namespace {

using Selectors = FaultPair;

std::vector<std::pair<uint64_t, ibv_wc_status>> statuses(const std::vector<ibv_wc>& wcs) {
  std::vector<std::pair<uint64_t, ibv_wc_status>> out;
  for (const ibv_wc& wc : wcs) out.emplace_back(wc.wr_id, wc.status);
  return out;
}

TEST_F(Selectors, OpcodeSelectsOnlyThatOperation) {
  begin("completion_error(rem_access_err) opcode=rdma_write nth=1");
  ASSERT_EQ(recv_on_b(9), 0);
  ASSERT_EQ(send_a_to_b(1), 0);   // a SEND: not selected
  ASSERT_EQ(write_a_to_b(2), 0);  // the first RDMA WRITE: selected
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {{1, IBV_WC_SUCCESS},
                                                                    {2, IBV_WC_REM_ACCESS_ERR}};
  EXPECT_EQ(statuses(poll(cq_a_, 2)), expected);
}

TEST_F(Selectors, SideRecvSelectsReceivesOnly) {
  begin("completion_error(loc_len_err) side=recv nth=1");
  ASSERT_EQ(recv_on_b(9), 0);
  ASSERT_EQ(send_a_to_b(1), 0);
  const std::vector<std::pair<uint64_t, ibv_wc_status>> sender = {{1, IBV_WC_SUCCESS}};
  EXPECT_EQ(statuses(poll(cq_a_, 1)), sender) << "the send side is not selected";
  const std::vector<std::pair<uint64_t, ibv_wc_status>> receiver = {{9, IBV_WC_LOC_LEN_ERR}};
  EXPECT_EQ(statuses(poll(cq_b_, 1)), receiver);
}

TEST_F(Selectors, WrIdWithMaskSelectsMatchingIdsOnly) {
  begin("completion_error(rem_access_err) wr_id=0x100/0xf00");
  ASSERT_EQ(write_a_to_b(0x201), 0);
  ASSERT_EQ(write_a_to_b(0x1ff), 0);
  const auto got = statuses(poll(cq_a_, 2));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::pair(uint64_t{0x201}, IBV_WC_SUCCESS));
  EXPECT_EQ(got[1], std::pair(uint64_t{0x1ff}, IBV_WC_REM_ACCESS_ERR)) << "0x1ff & 0xf00 == 0x100";
}

TEST_F(Selectors, ObjectSelectsOneQpByCreationIndex) {
  begin("flush qp#1 nth=1");
  ASSERT_EQ(write_a_to_b(1), 0);  // qp#0: not selected
  const std::vector<std::pair<uint64_t, ibv_wc_status>> a = {{1, IBV_WC_SUCCESS}};
  EXPECT_EQ(statuses(poll(cq_a_, 1)), a);
  ASSERT_EQ(recv_on_b(2), 0);  // qp#1's first WR: flushed
  const std::vector<std::pair<uint64_t, ibv_wc_status>> b = {{2, IBV_WC_WR_FLUSH_ERR}};
  EXPECT_EQ(statuses(poll(cq_b_, 1)), b);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
}

TEST_F(Selectors, QpTypeThatNoQpHasNeverFires) {
  begin("flush type=ud");
  ASSERT_EQ(write_a_to_b(1), 0);
  const std::vector<std::pair<uint64_t, ibv_wc_status>> a = {{1, IBV_WC_SUCCESS}};
  EXPECT_EQ(statuses(poll(cq_a_, 1)), a);
  EXPECT_EQ(session_->fired()[0], 0u);
}

TEST_F(Selectors, RnrRetryExhaustionCountsOnlyRequestsThatConsumeAReceive) {
  // qp#1's receive and RDMA WRITE are no opportunities: its first SEND is.
  begin("rnr_retry_exhausted qp#1 nth=1");
  ASSERT_EQ(recv_on_b(5), 0);
  ASSERT_EQ(post_send(b_, IBV_WR_RDMA_WRITE, 11, mr_b_, buf_b_, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf_a_), mr_a_->rkey),
            0);
  ASSERT_EQ(post_recv(a_, 6, mr_a_, buf_a_, 64), 0);
  ASSERT_EQ(post_send(b_, IBV_WR_SEND, 12, mr_b_, buf_b_, 8), 0);
  // Caused on the simulated device: qp#1 goes to ERR (its receive is
  // flushed) and qp#0 never sees the SEND (its receive stays posted).
  // (The receive's flush may come before or after the RNR error: they are
  // on different work queues, whose relative order the seed draws.)
  auto b = statuses(poll(cq_b_, 3));
  ASSERT_EQ(b.size(), 3u);
  std::erase(b, std::pair(uint64_t{5}, IBV_WC_WR_FLUSH_ERR));
  const std::vector<std::pair<uint64_t, ibv_wc_status>> sends = {{11, IBV_WC_SUCCESS},
                                                                 {12, IBV_WC_RNR_RETRY_EXC_ERR}};
  EXPECT_EQ(b, sends) << "the receive was flushed, the sends completed in order";
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_a_, 1, &wc), 0) << "qp#0's receive is still waiting";
  EXPECT_EQ(session_->fired()[0], 1u);
}

TEST_F(Selectors, CountersArePerObject) {
  // nth=2 counts each QP's WRs on its own: the second WR of each QP.
  begin("completion_error(rem_access_err) side=send nth=2");
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(post_send(b_, IBV_WR_RDMA_WRITE, 11, mr_b_, buf_b_, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf_a_), mr_a_->rkey),
            0);
  ASSERT_EQ(write_a_to_b(2), 0);
  ASSERT_EQ(post_send(b_, IBV_WR_RDMA_WRITE, 12, mr_b_, buf_b_, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf_a_), mr_a_->rkey),
            0);
  const std::vector<std::pair<uint64_t, ibv_wc_status>> a = {{1, IBV_WC_SUCCESS},
                                                             {2, IBV_WC_REM_ACCESS_ERR}};
  const std::vector<std::pair<uint64_t, ibv_wc_status>> b = {{11, IBV_WC_SUCCESS},
                                                             {12, IBV_WC_REM_ACCESS_ERR}};
  EXPECT_EQ(statuses(poll(cq_a_, 2)), a);
  EXPECT_EQ(statuses(poll(cq_b_, 2)), b);
  EXPECT_EQ(session_->fired()[0], 2u);
}

}  // namespace
}  // namespace verbfault::testing

#include "verbs_fixture.h"

namespace verbfault::testing {
namespace {

TEST_F(RcPair, SendMovesDataAndCompletesBothSides) {
  std::memcpy(buf_a_, "hello", 6);
  ASSERT_EQ(post_recv(b_, 7, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 3, mr_a_, buf_a_, 6), 0);
  auto send = poll(cq_a_, 1);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(send.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(send[0].wr_id, 3u);
  EXPECT_EQ(send[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].wr_id, 7u);
  EXPECT_EQ(recv[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(recv[0].byte_len, 6u);
  EXPECT_EQ(recv[0].qp_num, b_->qp_num);
  EXPECT_STREQ(reinterpret_cast<char*>(buf_b_), "hello");
}

}  // namespace
}  // namespace verbfault::testing

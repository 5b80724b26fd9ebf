// What the fuzzers (fuzz/) found in the simulated device, one test each,
// each failing before its fix.
#include "verbs_fixture.h"

#include <verbfault/fabric.h>

namespace verbfault::testing {
namespace {

// fuzz_verbs_sequence: after DEVICE_FATAL the posts failed with EIO but left
// *bad_wr as it was. ibv_post_send(3), ibv_post_recv(3),
// ibv_post_srq_recv(3): on failure bad_wr points at the first WR that
// failed, here the first of the list.
TEST_F(RcPair, PostsAfterDeviceFatalPointBadWrAtTheFirstWr) {
  ibv_srq_init_attr init{};
  init.attr.max_wr = 4;
  init.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &init);
  ASSERT_NE(srq, nullptr);
  ASSERT_EQ(fabric::device_fatal(ctx_), 0);

  ibv_sge sge{reinterpret_cast<uintptr_t>(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr send[2]{};
  send[0].next = &send[1];
  for (ibv_send_wr& wr : send) {
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
  }
  ibv_send_wr* bad_send = nullptr;
  EXPECT_EQ(ibv_post_send(a_, send, &bad_send), EIO);
  EXPECT_EQ(bad_send, &send[0]);

  ibv_recv_wr recv[2]{};
  recv[0].next = &recv[1];
  for (ibv_recv_wr& wr : recv) {
    wr.sg_list = &sge;
    wr.num_sge = 1;
  }
  ibv_recv_wr* bad_recv = nullptr;
  EXPECT_EQ(ibv_post_recv(b_, recv, &bad_recv), EIO);
  EXPECT_EQ(bad_recv, &recv[0]);
  bad_recv = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(srq, recv, &bad_recv), EIO);
  EXPECT_EQ(bad_recv, &recv[0]);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

}  // namespace
}  // namespace verbfault::testing

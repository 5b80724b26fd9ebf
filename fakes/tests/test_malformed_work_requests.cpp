// Work requests the application got wrong, refused before the device reads
// what they point at: a num_sge over the queue's limit with a shorter
// sg_list, or no sg_list at all (ibv_post_send(3), ibv_post_recv(3),
// ibv_post_srq_recv(3), ibv_wr_post(3): EINVAL, bad_wr at the WR).
#include "guard_page.h"
#include "verbs_fixture.h"

#include <cerrno>
#include <cstring>

namespace verbfault::testing {
namespace {

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

constexpr int kHugeNumSge = 1 << 20;

// One SGE, right before an inaccessible page: a read of a second entry faults.
class MalformedWrs : public RcPair {
 protected:
  ibv_sge* one_sge(ibv_mr* mr, void* buf) {
    ibv_sge* sge = guarded_.at_end<ibv_sge>();
    *sge = {addr_of(buf), 8, mr->lkey};
    return sge;
  }
  GuardedArray guarded_{4096};
};

TEST_F(MalformedWrs, SendWithNumSgeOverMaxSendSgeIsEinvalBeforeTheListIsRead) {
  ibv_send_wr wr[2]{};
  wr[0].wr_id = 1;
  wr[0].opcode = IBV_WR_SEND;
  wr[0].sg_list = one_sge(mr_a_, buf_a_);
  wr[0].num_sge = 1;
  wr[0].send_flags = IBV_SEND_SIGNALED;
  wr[0].next = &wr[1];
  wr[1] = wr[0];
  wr[1].wr_id = 2;
  wr[1].num_sge = kHugeNumSge;
  wr[1].next = nullptr;
  ASSERT_EQ(post_recv(b_, 10, mr_b_, buf_b_, 64), 0);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr[0], &bad), EINVAL);
  EXPECT_EQ(bad, &wr[1]);
  // The WR before the bad one was posted.
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
}

TEST_F(MalformedWrs, InlineSendWithNumSgeOverMaxSendSgeIsEinval) {
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = one_sge(mr_a_, buf_a_);
  wr.num_sge = kHugeNumSge;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST_F(MalformedWrs, SendWithSgesButNoSgListIsEinval) {
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = nullptr;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = addr_of(buf_b_);
  wr.wr.rdma.rkey = mr_b_->rkey;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  // num_sge 0 needs no list: a zero-length write.
  wr.num_sge = 0;
  wr.send_flags = IBV_SEND_SIGNALED;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
}

TEST_F(MalformedWrs, ReceiveWithSgesButNoSgListIsEinval) {
  ibv_recv_wr wr[2]{};
  wr[0].wr_id = 1;
  wr[0].sg_list = one_sge(mr_b_, buf_b_);
  wr[0].num_sge = 1;
  wr[0].next = &wr[1];
  wr[1].wr_id = 2;
  wr[1].sg_list = nullptr;
  wr[1].num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_recv(b_, &wr[0], &bad), EINVAL);
  EXPECT_EQ(bad, &wr[1]);
  wr[1].sg_list = wr[0].sg_list;
  wr[1].num_sge = kHugeNumSge;
  EXPECT_EQ(ibv_post_recv(b_, &wr[1], &bad), EINVAL);
  EXPECT_EQ(bad, &wr[1]);
}

TEST_F(MalformedWrs, SrqReceiveWithTooManySgesOrNoSgListIsEinval) {
  ibv_srq_init_attr init{};
  init.attr.max_wr = 4;
  init.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &init);
  ASSERT_NE(srq, nullptr);
  ibv_recv_wr wr{};
  wr.sg_list = one_sge(mr_b_, buf_b_);
  wr.num_sge = kHugeNumSge;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  wr.sg_list = nullptr;
  wr.num_sge = 1;
  bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

TEST_F(MalformedWrs, WrSetSgeListOverMaxSendSgeFailsTheBatchWithoutReadingTheList) {
  ibv_qp_init_attr_ex attr{};
  attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  attr.pd = pd_;
  attr.send_cq = cq_a_;
  attr.recv_cq = cq_a_;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = 4;
  attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
  ibv_qp* qp = ibv_create_qp_ex(ctx_, &attr);
  ASSERT_NE(qp, nullptr) << std::strerror(errno);
  ASSERT_EQ(rc_connect(qp, {.dest_qp_num = b_->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);
  ASSERT_NE(qpx, nullptr);
  ibv_wr_start(qpx);
  qpx->wr_id = 1;
  ibv_wr_rdma_write(qpx, mr_b_->rkey, addr_of(buf_b_));
  ibv_wr_set_sge_list(qpx, kHugeNumSge, one_sge(mr_a_, buf_a_));
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
  ibv_wr_start(qpx);
  ibv_wr_rdma_write(qpx, mr_b_->rkey, addr_of(buf_b_));
  ibv_wr_set_sge_list(qpx, 1, nullptr);
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

// ibv_post_send(3): an opcode the device does not know is EINVAL; the
// device reads it as an integer first (0x7f is none of enum ibv_wr_opcode:
// loading it as the enum is undefined behaviour, which UBSan's
// -fsanitize=enum stops at).
TEST_F(MalformedWrs, AnUnknownOpcodeIsEinval) {
  ibv_sge sge{addr_of(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wr{};
  const uint32_t unknown = 0x7f;
  std::memcpy(&wr.opcode, &unknown, sizeof unknown);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

// ibv_modify_qp(3): enum fields that hold none of their enumerators are
// EINVAL, and the QP stays as it was.
TEST_F(MalformedWrs, UnknownStatesAndMtusAreEinval) {
  ibv_qp_attr attr{};
  const uint32_t unknown = 99;
  std::memcpy(&attr.qp_state, &unknown, sizeof unknown);
  EXPECT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE), EINVAL);
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  std::memcpy(&attr.cur_qp_state, &unknown, sizeof unknown);
  EXPECT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
  attr = {};
  std::memcpy(&attr.path_mig_state, &unknown, sizeof unknown);
  EXPECT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_PATH_MIG_STATE), EINVAL);
  attr = {};
  std::memcpy(&attr.path_mtu, &unknown, sizeof unknown);
  EXPECT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_PATH_MTU), EINVAL);
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
}

}  // namespace
}  // namespace verbfault::testing

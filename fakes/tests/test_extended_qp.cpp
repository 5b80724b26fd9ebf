// ibv_create_qp_ex(3) and the ibv_wr_* post API (ibv_wr_post(3)) on the
// simulated device: every builder and setter, all-or-nothing posting,
// abort, and what creation refuses.
#include "verbs_fixture.h"

#include <cerrno>
#include <cstring>
#include <vector>

namespace verbfault::testing {
namespace {

constexpr uint64_t kRcOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                            IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                            IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                            IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

class ExtendedQp : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    peer_cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    ASSERT_TRUE(cq_ && peer_cq_);
    mr_ = reg(buf_, sizeof buf_);
    ASSERT_NE(mr_, nullptr);
  }

  ibv_qp* create_ex(ibv_qp_type type, uint64_t send_ops, uint32_t depth = 8) {
    ibv_qp_init_attr_ex attr{};
    attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.pd = pd_;
    attr.send_cq = cq_;
    attr.recv_cq = cq_;
    attr.qp_type = type;
    attr.cap.max_send_wr = depth;
    attr.cap.max_recv_wr = depth;
    attr.cap.max_send_sge = 2;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = 64;
    attr.send_ops_flags = send_ops;
    return ibv_create_qp_ex(ctx_, &attr);
  }

  // An RC QP with the extended post API, connected to a plain peer.
  void connect_pair(uint64_t send_ops = kRcOps, uint32_t depth = 8) {
    qp_ = create_ex(IBV_QPT_RC, send_ops, depth);
    ASSERT_NE(qp_, nullptr) << std::strerror(errno);
    peer_ = create_qp(IBV_QPT_RC, peer_cq_, peer_cq_);
    ASSERT_NE(peer_, nullptr);
    ASSERT_EQ(rc_connect(qp_, {.dest_qp_num = peer_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    ASSERT_EQ(rc_connect(peer_, {.dest_qp_num = qp_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    qpx_ = ibv_qp_to_qp_ex(qp_);
    ASSERT_NE(qpx_, nullptr);
  }

  uint64_t remote(size_t offset) const { return reinterpret_cast<uintptr_t>(buf_ + offset); }

  ibv_cq* cq_ = nullptr;
  ibv_cq* peer_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_qp* peer_ = nullptr;
  ibv_qp_ex* qpx_ = nullptr;
  ibv_mr* mr_ = nullptr;
  alignas(64) uint8_t buf_[4096] = {};
};

TEST_F(ExtendedQp, EveryBuilderPostsItsOperation) {
  connect_pair();
  std::memcpy(buf_, "written", 8);
  uint64_t counter = 5;
  std::memcpy(buf_ + 1024, &counter, 8);
  for (uint64_t i = 0; i < 2; ++i) ASSERT_EQ(post_recv(peer_, 50 + i, mr_, buf_ + 2048, 64), 0);
  ibv_wr_start(qpx_);
  qpx_->wr_flags = IBV_SEND_SIGNALED;
  qpx_->wr_id = 1;
  ibv_wr_rdma_write(qpx_, mr_->rkey, remote(512));
  ibv_wr_set_sge(qpx_, mr_->lkey, remote(0), 8);
  qpx_->wr_id = 2;
  ibv_wr_rdma_read(qpx_, mr_->rkey, remote(512));
  ibv_wr_set_sge(qpx_, mr_->lkey, remote(600), 8);
  qpx_->wr_id = 3;
  ibv_wr_atomic_fetch_add(qpx_, mr_->rkey, remote(1024), 10);
  ibv_wr_set_sge(qpx_, mr_->lkey, remote(1100), 8);
  qpx_->wr_id = 4;
  char text[] = "inline!";
  ibv_wr_send(qpx_);
  ibv_wr_set_inline_data(qpx_, text, sizeof text);
  std::memset(text, 0, sizeof text);  // copied at the setter: reusable at once
  qpx_->wr_id = 5;
  ibv_wr_send_imm(qpx_, htobe32(0x77));
  ibv_wr_set_sge(qpx_, mr_->lkey, remote(0), 8);
  ASSERT_EQ(ibv_wr_complete(qpx_), 0);

  auto wc = poll(cq_, 5);
  ASSERT_EQ(wc.size(), 5u);
  const ibv_wc_opcode opcodes[] = {IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD,
                                   IBV_WC_SEND, IBV_WC_SEND};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(wc[i].wr_id, i + 1);
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS) << i;
    EXPECT_EQ(wc[i].opcode, opcodes[i]) << i;
  }
  EXPECT_STREQ(reinterpret_cast<char*>(buf_ + 512), "written");
  EXPECT_STREQ(reinterpret_cast<char*>(buf_ + 600), "written");
  uint64_t value = 0, fetched = 0;
  std::memcpy(&value, buf_ + 1024, 8);
  std::memcpy(&fetched, buf_ + 1100, 8);
  EXPECT_EQ(value, 15u);
  EXPECT_EQ(fetched, 5u);
  auto received = poll(peer_cq_, 2);
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0].byte_len, sizeof text);
  EXPECT_TRUE(received[1].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(be32toh(received[1].imm_data), 0x77u);
}

TEST_F(ExtendedQp, CompleteIsAllOrNothing) {
  connect_pair(kRcOps, /*depth=*/2);
  ibv_wr_start(qpx_);
  for (uint64_t i = 0; i < 3; ++i) {  // one more than the send queue holds
    qpx_->wr_id = i;
    qpx_->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(qpx_, mr_->rkey, remote(512));
    ibv_wr_set_sge(qpx_, mr_->lkey, remote(0), 8);
  }
  EXPECT_EQ(ibv_wr_complete(qpx_), ENOMEM);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_, 1, &wc), 0) << "the entire posting is aborted (ibv_wr_post(3))";
}

TEST_F(ExtendedQp, AnOperationNotAskedForAtCreationFailsTheBatch) {
  connect_pair(IBV_QP_EX_WITH_SEND);
  ibv_wr_start(qpx_);
  qpx_->wr_id = 1;
  ibv_wr_send(qpx_);
  ibv_wr_set_sge(qpx_, mr_->lkey, remote(0), 8);
  qpx_->wr_id = 2;
  ibv_wr_rdma_write(qpx_, mr_->rkey, remote(512));
  EXPECT_EQ(ibv_wr_complete(qpx_), EINVAL);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_, 1, &wc), 0);
}

TEST_F(ExtendedQp, AbortDiscardsTheBatch) {
  connect_pair();
  ibv_wr_start(qpx_);
  qpx_->wr_id = 1;
  qpx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qpx_, mr_->rkey, remote(512));
  ibv_wr_set_sge(qpx_, mr_->lkey, remote(0), 8);
  ibv_wr_abort(qpx_);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_, 1, &wc), 0);
  EXPECT_EQ(ibv_wr_complete(qpx_), EINVAL) << "no batch open after the abort";
}

TEST_F(ExtendedQp, CompleteBeforeRtsIsEinval) {
  qp_ = create_ex(IBV_QPT_RC, kRcOps);
  ASSERT_NE(qp_, nullptr);
  qpx_ = ibv_qp_to_qp_ex(qp_);
  ASSERT_NE(qpx_, nullptr);
  ibv_wr_start(qpx_);
  ibv_wr_send(qpx_);
  ibv_wr_set_sge(qpx_, mr_->lkey, remote(0), 8);
  EXPECT_EQ(ibv_wr_complete(qpx_), EINVAL) << "a QP in RESET takes no send WR (ibv_post_send(3))";
}

TEST_F(ExtendedQp, CreationRefusesWhatTheDeviceCannotDo) {
  errno = 0;
  EXPECT_EQ(create_ex(IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP) << "memory windows are bound on UC and RC only (ibv_wr_post(3))";
  errno = 0;
  EXPECT_EQ(create_ex(IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_READ), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP) << "RDMA READ is RC only";
  ibv_qp_init_attr_ex attr{};
  attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
  attr.pd = pd_;
  attr.send_cq = attr.recv_cq = cq_;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.create_flags = IBV_QP_CREATE_SCATTER_FCS;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  attr.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;  // no PD
  attr.send_ops_flags = IBV_QP_EX_WITH_SEND;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(ExtendedQp, AQpWithoutSendOpsHasNoExtendedPostApi) {
  ibv_qp* plain = create_qp(IBV_QPT_RC, cq_, cq_);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(ibv_qp_to_qp_ex(plain), nullptr);
}

}  // namespace
}  // namespace verbfault::testing

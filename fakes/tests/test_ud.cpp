// UD datagrams (ibv_post_send(3) wr.ud, ibv_post_recv(3) GRH area,
// ibv_poll_cq(3) IBV_WC_GRH, Q_Key checks of IBA 10.2.4).
#include "verbs_fixture.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace verbfault::testing {
namespace {

constexpr uint32_t kQkey = 0x11111111;
constexpr size_t kGrh = 40;

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

class UdPair : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    cq_a_ = ibv_create_cq(ctx_, 32, nullptr, nullptr, 0);
    cq_b_ = ibv_create_cq(ctx_, 32, nullptr, nullptr, 0);
    ASSERT_NE(cq_a_, nullptr);
    ASSERT_NE(cq_b_, nullptr);
    a_ = create_qp(IBV_QPT_UD, cq_a_, cq_a_);
    b_ = create_qp(IBV_QPT_UD, cq_b_, cq_b_);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_EQ(activate_ud(a_, kQkey), 0);
    ASSERT_EQ(activate_ud(b_, kQkey), 0);
    buf_a_.assign(8192, 0);
    buf_b_.assign(8192, 0);
    mr_a_ = reg(buf_a_.data(), buf_a_.size());
    mr_b_ = reg(buf_b_.data(), buf_b_.size());
    ibv_ah_attr ah = address();
    ah_ = ibv_create_ah(pd_, &ah);
    ASSERT_NE(ah_, nullptr);
  }

  int send(ibv_ah* ah, uint64_t wr_id, uint32_t len, uint32_t qkey = kQkey,
           ibv_wr_opcode opcode = IBV_WR_SEND, bool* bad_is_wr = nullptr) {
    ibv_sge sge{addr_of(buf_a_.data()), len, mr_a_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(0xabcdef01);
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b_->qp_num;
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr* bad = nullptr;
    int rc = ibv_post_send(a_, &wr, &bad);
    if (bad_is_wr != nullptr) *bad_is_wr = bad == &wr;
    return rc;
  }

  ibv_cq* cq_a_ = nullptr;
  ibv_cq* cq_b_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
  std::vector<uint8_t> buf_a_;
  std::vector<uint8_t> buf_b_;
  ibv_mr* mr_a_ = nullptr;
  ibv_mr* mr_b_ = nullptr;
  ibv_ah* ah_ = nullptr;
};

TEST_F(UdPair, ReceiveHoldsGrhAreaThenPayload) {
  for (int i = 0; i < 100; ++i) buf_a_[i] = static_cast<uint8_t>(i + 1);
  std::memset(buf_b_.data(), 0xcc, kGrh);  // untouched without a GRH
  ASSERT_EQ(post_recv(b_, 7, mr_b_, buf_b_.data(), 2048), 0);
  ASSERT_EQ(send(ah_, 8, 100), 0);
  auto sent = poll(cq_a_, 1);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(sent[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(sent[0].wr_id, 8u);
  EXPECT_EQ(sent[0].qp_num, a_->qp_num);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(recv[0].wr_id, 7u);
  EXPECT_EQ(recv[0].byte_len, 100u + kGrh);
  EXPECT_EQ(recv[0].qp_num, b_->qp_num);
  EXPECT_EQ(recv[0].src_qp, a_->qp_num);
  EXPECT_EQ(recv[0].slid, lid());
  // ah_ has a GRH only where the link layer needs one (RoCE).
  EXPECT_EQ(recv[0].wc_flags & IBV_WC_GRH, ethernet() ? unsigned{IBV_WC_GRH} : 0u);
  EXPECT_EQ(std::memcmp(buf_b_.data() + kGrh, buf_a_.data(), 100), 0);
  EXPECT_EQ(buf_b_[kGrh + 100], 0);
}

TEST_F(UdPair, GlobalAhSetsGrhFlagAndFillsTheGrh) {
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &gid), 0);
  ibv_ah_attr attr{};
  attr.dlid = lid();
  attr.port_num = 1;
  attr.is_global = 1;
  attr.grh.dgid = gid;
  attr.grh.sgid_index = 0;
  attr.grh.hop_limit = 64;
  ibv_ah* global = ibv_create_ah(pd_, &attr);
  ASSERT_NE(global, nullptr);
  std::memcpy(buf_a_.data(), "global", 6);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_.data(), 256), 0);
  ASSERT_EQ(send(global, 2, 6), 0);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_TRUE(recv[0].wc_flags & IBV_WC_GRH);
  EXPECT_EQ(recv[0].byte_len, 6u + kGrh);
  ibv_grh grh;
  std::memcpy(&grh, buf_b_.data(), sizeof grh);
  EXPECT_EQ(std::memcmp(&grh.dgid, &gid, sizeof gid), 0);
  EXPECT_EQ(std::memcmp(&grh.sgid, &gid, sizeof gid), 0);  // sent from this very port
  EXPECT_EQ(std::memcmp(buf_b_.data() + kGrh, "global", 6), 0);
  EXPECT_EQ(ibv_destroy_ah(global), 0);
}

TEST_F(UdPair, SendWithImmCarriesImmediate) {
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_.data(), 256), 0);
  ASSERT_EQ(send(ah_, 2, 10, kQkey, IBV_WR_SEND_WITH_IMM), 0);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_TRUE(recv[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(recv[0].imm_data), 0xabcdef01u);
  EXPECT_EQ(recv[0].byte_len, 10u + kGrh);
}

TEST_F(UdPair, WrongQkeyIsSilentlyDropped) {
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_.data(), 256), 0);
  std::memcpy(buf_a_.data(), "dropped", 7);
  ASSERT_EQ(send(ah_, 2, 7, kQkey + 1), 0);
  auto sent = poll(cq_a_, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);  // unreliable: the sender never knows
  EXPECT_EQ(poll(cq_b_, 1, 20).size(), 0u);
  EXPECT_EQ(std::memcmp(buf_b_.data() + kGrh, "\0\0\0\0\0\0\0", 7), 0);
  // The receive WR was not consumed: the next, correct datagram takes it.
  std::memcpy(buf_a_.data(), "kept", 4);
  ASSERT_EQ(send(ah_, 3, 4), 0);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wr_id, 1u);
  EXPECT_EQ(recv[0].byte_len, 4u + kGrh);
  EXPECT_EQ(std::memcmp(buf_b_.data() + kGrh, "kept", 4), 0);
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);
}

TEST_F(UdPair, DatagramWithoutReceiveIsDropped) {
  ASSERT_EQ(send(ah_, 2, 7), 0);
  auto sent = poll(cq_a_, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(poll(cq_b_, 1, 20).size(), 0u);
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);
}

TEST_F(UdPair, MessageBiggerThanMtuIsEinval) {
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  const uint32_t mtu = 128u << port.active_mtu;
  ASSERT_LE(mtu + 1, buf_a_.size());
  bool bad_is_wr = false;
  EXPECT_EQ(send(ah_, 1, mtu + 1, kQkey, IBV_WR_SEND, &bad_is_wr), EINVAL);
  EXPECT_TRUE(bad_is_wr);
  EXPECT_EQ(poll(cq_a_, 1, 5).size(), 0u);
  // Exactly one MTU fits in one packet.
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_.data(), mtu + kGrh), 0);
  EXPECT_EQ(send(ah_, 2, mtu), 0);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].byte_len, mtu + kGrh);
}

// IBA 10.3.1: a send WR completing in error takes a UD QP to SQE, not ERR:
// the rest of its send queue is flushed, its receive queue goes on
// (C10-38), and modify_qp SQE -> RTS resumes sending.
TEST_F(UdPair, ASendErrorMovesTheQpToSqeAndItsReceiveQueueGoesOn) {
  ASSERT_EQ(post_recv(a_, 30, mr_a_, buf_a_.data() + 4096, 2048), 0);
  ibv_sge bad_sge{addr_of(buf_a_.data()), 8, mr_a_->lkey + 0x100};  // no such MR
  ibv_sge good_sge{addr_of(buf_a_.data()), 8, mr_a_->lkey};
  ibv_send_wr behind{};
  behind.wr_id = 2;
  behind.opcode = IBV_WR_SEND;
  behind.sg_list = &good_sge;
  behind.num_sge = 1;
  behind.send_flags = IBV_SEND_SIGNALED;
  behind.wr.ud.ah = ah_;
  behind.wr.ud.remote_qpn = b_->qp_num;
  behind.wr.ud.remote_qkey = kQkey;
  ibv_send_wr failing = behind;
  failing.wr_id = 1;
  failing.sg_list = &bad_sge;
  failing.next = &behind;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &failing, &bad), 0);
  auto sent = poll(cq_a_, 2);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].wr_id, 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(sent[1].wr_id, 2u);
  EXPECT_EQ(sent[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_SQE);

  // The receive posted before goes on: b's datagram lands in it.
  ibv_sge from_b{addr_of(buf_b_.data()), 5, mr_b_->lkey};
  std::memcpy(buf_b_.data(), "to-a!", 5);
  ibv_send_wr to_a = behind;
  to_a.wr_id = 40;
  to_a.sg_list = &from_b;
  to_a.wr.ud.remote_qpn = a_->qp_num;
  ASSERT_EQ(ibv_post_send(b_, &to_a, &bad), 0);
  auto received = poll(cq_a_, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].wr_id, 30u);
  EXPECT_EQ(received[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(received[0].byte_len, 5u + kGrh);
  EXPECT_EQ(poll(cq_b_, 1).size(), 1u);

  // SQE -> RTS: the send queue works again.
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE), 0);
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
  ASSERT_EQ(post_recv(b_, 50, mr_b_, buf_b_.data() + 4096, 2048), 0);
  ASSERT_EQ(send(ah_, 3, 8), 0);
  auto resent = poll(cq_a_, 1);
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(poll(cq_b_, 1).size(), 1u);
}

TEST_F(UdPair, RdmaOperationsAreNotAllowedOnUd) {
  for (ibv_wr_opcode op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
                           IBV_WR_ATOMIC_FETCH_AND_ADD}) {
    bool bad_is_wr = false;
    EXPECT_EQ(send(ah_, 1, 8, kQkey, op, &bad_is_wr), EINVAL) << op;
    EXPECT_TRUE(bad_is_wr);
  }
  EXPECT_EQ(poll(cq_a_, 1, 5).size(), 0u);
}

}  // namespace
}  // namespace verbfault::testing

// Posting rules of ibv_post_send(3) / ibv_post_recv(3) and the RC / UC
// operations with their completions (ibv_poll_cq(3)), on one device and
// between two devices, plus the basic error paths.
#include "verbs_fixture.h"

#include <verbfault/fabric.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

ibv_send_wr make_wr(uint64_t wr_id, ibv_wr_opcode opcode, ibv_sge* sges, int num_sge,
                    unsigned flags = IBV_SEND_SIGNALED) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = opcode;
  wr.sg_list = sges;
  wr.num_sge = num_sge;
  wr.send_flags = flags;
  return wr;
}

// ibv_poll_cq(3): an error completion only has wr_id, status, qp_num and
// vendor_err; the simulated device fills every other field with 0xa5.
// The opcode is read as bytes: 0xa5a5a5a5 is no ibv_wc_opcode, and loading
// it as one is undefined (UBSan).
void expect_poisoned(const ibv_wc& wc) {
  uint32_t opcode = 0;
  std::memcpy(&opcode, &wc.opcode, sizeof opcode);
  EXPECT_EQ(opcode, 0xa5a5a5a5u);
  EXPECT_EQ(wc.byte_len, 0xa5a5a5a5u);
  EXPECT_EQ(wc.imm_data, 0xa5a5a5a5u);
  EXPECT_EQ(wc.src_qp, 0xa5a5a5a5u);
  EXPECT_EQ(wc.wc_flags, 0xa5a5a5a5u);
  EXPECT_EQ(wc.pkey_index, 0xa5a5);
  EXPECT_EQ(wc.slid, 0xa5a5);
  EXPECT_EQ(wc.sl, 0xa5);
  EXPECT_EQ(wc.dlid_path_bits, 0xa5);
}

// ---- posting rules ---------------------------------------------------------

TEST_F(SimDevice, PostSendBeforeRtsIsEinvalWithBadWr) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp* qp = create_qp(IBV_QPT_RC, cq, cq);
  ASSERT_NE(qp, nullptr);
  uint8_t buf[16] = {};
  ibv_mr* mr = reg(buf, sizeof buf);
  ibv_sge sge{addr_of(buf), 8, mr->lkey};
  ibv_send_wr wr[2] = {make_wr(1, IBV_WR_SEND, &sge, 1), make_wr(2, IBV_WR_SEND, &sge, 1)};
  wr[0].next = &wr[1];
  auto expect_rejected = [&](const char* state) {
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(qp, &wr[0], &bad), EINVAL) << state;
    EXPECT_EQ(bad, &wr[0]) << state;
  };
  expect_rejected("RESET");
  // Connected to itself, one step at a time.
  RcConnectOptions to_self{.dest_qp_num = qp->qp_num,
                           .dlid = lid(),
                           .grh = grh(),
                           .access = 0,
                           .min_rnr_timer = 0,
                           .stop_at = IBV_QPS_INIT};
  ASSERT_EQ(rc_connect(qp, to_self), 0);
  expect_rejected("INIT");
  to_self.from = IBV_QPS_INIT;
  to_self.stop_at = IBV_QPS_RTR;
  ASSERT_EQ(rc_connect(qp, to_self), 0);
  expect_rejected("RTR");
  EXPECT_EQ(poll(cq, 1, 5).size(), 0u);  // nothing was queued
}

TEST_F(SimDevice, PostRecvInResetIsEinvalAndAllowedFromInit) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* qp = create_qp(IBV_QPT_RC, cq, cq);
  ASSERT_NE(qp, nullptr);
  uint8_t buf[16];
  ibv_mr* mr = reg(buf, sizeof buf);
  ibv_sge sge{addr_of(buf), sizeof buf, mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = 5;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_recv(qp, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  ASSERT_EQ(rc_connect(qp, {.access = 0, .stop_at = IBV_QPS_INIT}), 0);
  bad = nullptr;
  EXPECT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
}

TEST_F(RcPair, TooManySgesIsEinvalAndBadWrPointsAtTheOffendingWr) {
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a_, &q, IBV_QP_CAP, &init), 0);
  const int max_sge = static_cast<int>(q.cap.max_send_sge);
  std::vector<ibv_sge> sges(max_sge + 1, ibv_sge{addr_of(buf_a_), 4, mr_a_->lkey});
  ibv_send_wr wr[3] = {
      make_wr(1, IBV_WR_RDMA_WRITE, sges.data(), 1),
      make_wr(2, IBV_WR_RDMA_WRITE, sges.data(), max_sge + 1),
      make_wr(3, IBV_WR_RDMA_WRITE, sges.data(), 1),
  };
  for (auto& w : wr) {
    w.wr.rdma.remote_addr = addr_of(buf_b_);
    w.wr.rdma.rkey = mr_b_->rkey;
  }
  wr[0].next = &wr[1];
  wr[1].next = &wr[2];
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr[0], &bad), EINVAL);
  EXPECT_EQ(bad, &wr[1]);
  // The WRs before the bad one were posted; the ones after were not.
  auto wc = poll(cq_a_, 2, 20);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);

  // The same on the receive side.
  ASSERT_EQ(ibv_query_qp(b_, &q, IBV_QP_CAP, &init), 0);
  std::vector<ibv_sge> rsges(q.cap.max_recv_sge + 1, ibv_sge{addr_of(buf_b_), 4, mr_b_->lkey});
  ibv_recv_wr rwr[2]{};
  rwr[0].wr_id = 10;
  rwr[0].sg_list = rsges.data();
  rwr[0].num_sge = static_cast<int>(q.cap.max_recv_sge) + 1;
  rwr[1].wr_id = 11;
  rwr[1].sg_list = rsges.data();
  rwr[1].num_sge = 1;
  rwr[1].next = &rwr[0];
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(b_, &rwr[1], &rbad), EINVAL);
  EXPECT_EQ(rbad, &rwr[0]);
}

// A QP pair with a send queue of `depth`, for queue-full tests.
class RcShallow : public RcPair {
 protected:
  void make(uint32_t depth) {
    a4_ = create_qp(IBV_QPT_RC, cq_a_, cq_a_, depth);
    b4_ = create_qp(IBV_QPT_RC, cq_b_, cq_b_, depth);
    ASSERT_NE(a4_, nullptr);
    ASSERT_NE(b4_, nullptr);
    ASSERT_EQ(rc_connect(a4_, {.dest_qp_num = b4_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    ASSERT_EQ(rc_connect(b4_, {.dest_qp_num = a4_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    ibv_qp_attr q{};
    ibv_qp_init_attr init{};
    ASSERT_EQ(ibv_query_qp(a4_, &q, IBV_QP_CAP, &init), 0);
    depth_ = q.cap.max_send_wr;
    ASSERT_GE(depth_, depth);
  }
  int write(uint64_t wr_id, unsigned flags) {
    return post_send(a4_, IBV_WR_RDMA_WRITE, wr_id, mr_a_, buf_a_, 8, flags, addr_of(buf_b_),
                     mr_b_->rkey);
  }
  ibv_qp* a4_ = nullptr;
  ibv_qp* b4_ = nullptr;
  uint32_t depth_ = 0;
};

TEST_F(RcShallow, SendQueueFullIsEnomemUntilCompletionsArePolled) {
  make(4);
  if (HasFatalFailure()) return;
  for (uint32_t i = 0; i < depth_; ++i) ASSERT_EQ(write(i, IBV_SEND_SIGNALED), 0) << i;
  // Completed, but not polled: the slots are still taken.
  ibv_sge sge{addr_of(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wr = make_wr(99, IBV_WR_RDMA_WRITE, &sge, 1);
  wr.wr.rdma.remote_addr = addr_of(buf_b_);
  wr.wr.rdma.rkey = mr_b_->rkey;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a4_, &wr, &bad), ENOMEM);
  EXPECT_EQ(bad, &wr);
  ibv_wc wc;
  ASSERT_EQ(ibv_poll_cq(cq_a_, 1, &wc), 1);
  EXPECT_EQ(wc.wr_id, 0u);
  EXPECT_EQ(write(100, IBV_SEND_SIGNALED), 0);  // one slot free
  EXPECT_EQ(write(101, IBV_SEND_SIGNALED), ENOMEM);
  EXPECT_EQ(poll(cq_a_, depth_).size(), depth_);
  EXPECT_EQ(write(102, IBV_SEND_SIGNALED), 0);
}

TEST_F(RcShallow, UnsignaledSlotsFreeOnlyWhenALaterSignaledWrIsPolled) {
  make(4);
  if (HasFatalFailure()) return;
  for (uint32_t i = 0; i < depth_; ++i) ASSERT_EQ(write(i, 0), 0);
  EXPECT_EQ(write(50, 0), ENOMEM);
  EXPECT_EQ(poll(cq_a_, 1, 5).size(), 0u);  // unsignaled: no completion ...
  EXPECT_EQ(write(50, 0), ENOMEM);          // ... so nothing was released
  ASSERT_EQ(ibv_destroy_qp(a4_), 0);
  ASSERT_EQ(ibv_destroy_qp(b4_), 0);

  make(4);
  if (HasFatalFailure()) return;
  for (uint32_t i = 0; i + 1 < depth_; ++i) ASSERT_EQ(write(i, 0), 0);
  ASSERT_EQ(write(7, IBV_SEND_SIGNALED), 0);
  EXPECT_EQ(write(8, 0), ENOMEM);
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 7u);
  // Polling the signaled WR released it and every unsignaled one before it.
  for (uint32_t i = 0; i < depth_; ++i) EXPECT_EQ(write(20 + i, 0), 0) << i;
  EXPECT_EQ(write(30, 0), ENOMEM);
}

TEST_F(RcPair, InlineDataAboveMaxInlineIsEinval) {
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a_, &q, IBV_QP_CAP, &init), 0);
  ASSERT_LT(q.cap.max_inline_data, sizeof buf_a_);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, sizeof buf_b_), 0);
  ibv_sge sge{addr_of(buf_a_), q.cap.max_inline_data + 1, 0};
  ibv_send_wr wr = make_wr(1, IBV_WR_SEND, &sge, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  sge.length = q.cap.max_inline_data;  // exactly the limit is fine
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto wc = poll(cq_b_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].byte_len, q.cap.max_inline_data);
}

TEST_F(RcPair, InlineWrIsStillLimitedToMaxSendSge) {
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a_, &q, IBV_QP_CAP, &init), 0);
  ASSERT_LE(q.cap.max_send_sge + 1, q.cap.max_inline_data);
  // max_send_sge + 1 one-byte SGEs: few enough bytes to be inlined, but
  // ibv_create_qp(3)'s max_send_sge bounds every send WR.
  std::vector<ibv_sge> sges(q.cap.max_send_sge + 1, ibv_sge{addr_of(buf_a_), 1, 0});
  ibv_send_wr wr = make_wr(1, IBV_WR_SEND, sges.data(), static_cast<int>(sges.size()),
                           IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

// A QP moved to RESET loses its work requests without completions (IBA
// 10.3.1) and its completions still in the CQ, as rdma-core's mlx4/mlx5
// providers clean them: a QP brought back to RTS finds no old flush.
TEST_F(RcShallow, ResetEmptiesTheQueuesAndRemovesTheQpsCompletions) {
  make(4);
  if (HasFatalFailure()) return;
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(b4_, &q, IBV_QP_CAP, &init), 0);
  const uint32_t depth = q.cap.max_recv_wr;
  for (uint32_t i = 0; i < depth; ++i) ASSERT_EQ(post_recv(b4_, i, mr_b_, buf_b_, 8), 0);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b4_, &a, IBV_QP_STATE), 0);  // flush completions, not polled yet
  a.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(ibv_modify_qp(b4_, &a, IBV_QP_STATE), 0);
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(cq_b_, 4, wc), 0) << "the flushes left with the reset";
  ASSERT_EQ(rc_connect(b4_, {.access = 0, .stop_at = IBV_QPS_INIT}), 0);
  // RESET emptied the receive queue: a full queue's worth can be posted,
  // and no more.
  for (uint32_t i = 0; i < depth; ++i) ASSERT_EQ(post_recv(b4_, 100 + i, mr_b_, buf_b_, 8), 0);
  EXPECT_EQ(post_recv(b4_, 200, mr_b_, buf_b_, 8), ENOMEM);
  EXPECT_EQ(ibv_poll_cq(cq_b_, 4, wc), 0);
}

// ---- RC operations ---------------------------------------------------------

TEST_F(RcPair, SendCompletesWithEveryFieldSet) {
  std::memcpy(buf_a_, "payload-1234", 12);
  ASSERT_EQ(post_recv(b_, 0x1111, mr_b_, buf_b_, 256), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 0x2222, mr_a_, buf_a_, 12), 0);
  auto send = poll(cq_a_, 1);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(send.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(send[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(send[0].wr_id, 0x2222u);
  EXPECT_EQ(send[0].qp_num, a_->qp_num);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(recv[0].wr_id, 0x1111u);
  EXPECT_EQ(recv[0].byte_len, 12u);
  EXPECT_EQ(recv[0].qp_num, b_->qp_num);
  EXPECT_EQ(recv[0].src_qp, a_->qp_num);
  EXPECT_EQ(recv[0].slid, lid());
  EXPECT_EQ(recv[0].wc_flags, 0u);
  EXPECT_EQ(std::memcmp(buf_b_, "payload-1234", 12), 0);
}

TEST_F(RcPair, SendWithImmDeliversImmediateInNetworkOrder) {
  std::memcpy(buf_a_, "imm", 3);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 64), 0);
  ibv_sge sge{addr_of(buf_a_), 3, mr_a_->lkey};
  ibv_send_wr wr = make_wr(2, IBV_WR_SEND_WITH_IMM, &sge, 1);
  wr.imm_data = htonl(0x12345678);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto send = poll(cq_a_, 1);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(send.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(send[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(recv[0].opcode, IBV_WC_RECV);
  EXPECT_TRUE(recv[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(recv[0].imm_data), 0x12345678u);
  EXPECT_EQ(recv[0].byte_len, 3u);
  EXPECT_EQ(std::memcmp(buf_b_, "imm", 3), 0);
}

TEST_F(RcPair, RdmaWriteMovesDataWithoutConsumingAReceive) {
  for (int i = 0; i < 100; ++i) buf_a_[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(post_recv(b_, 77, mr_b_, buf_b_ + 2048, 64), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 5, mr_a_, buf_a_, 100, IBV_SEND_SIGNALED,
                      addr_of(buf_b_ + 16), mr_b_->rkey),
            0);
  auto send = poll(cq_a_, 1);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(send[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(send[0].wr_id, 5u);
  EXPECT_EQ(send[0].qp_num, a_->qp_num);
  EXPECT_EQ(std::memcmp(buf_b_ + 16, buf_a_, 100), 0);
  EXPECT_EQ(buf_b_[15], 0);
  EXPECT_EQ(buf_b_[116], 0);
  EXPECT_EQ(poll(cq_b_, 1, 5).size(), 0u);
  // The receive is still there for the next SEND.
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 6, mr_a_, buf_a_, 4), 0);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wr_id, 77u);
}

TEST_F(RcPair, RdmaWriteWithImmConsumesAReceive) {
  std::memcpy(buf_a_, "written", 7);
  std::memset(buf_b_ + 1024, 0xee, 64);  // the receive buffer
  ASSERT_EQ(post_recv(b_, 31, mr_b_, buf_b_ + 1024, 64), 0);
  ibv_sge sge{addr_of(buf_a_), 7, mr_a_->lkey};
  ibv_send_wr wr = make_wr(32, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, 1);
  wr.imm_data = htonl(0xcafe);
  wr.wr.rdma.remote_addr = addr_of(buf_b_ + 8);
  wr.wr.rdma.rkey = mr_b_->rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto send = poll(cq_a_, 1);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(send.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(send[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(recv[0].wr_id, 31u);
  EXPECT_EQ(recv[0].byte_len, 7u);
  EXPECT_EQ(recv[0].qp_num, b_->qp_num);
  EXPECT_TRUE(recv[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(recv[0].imm_data), 0xcafeu);
  EXPECT_EQ(std::memcmp(buf_b_ + 8, "written", 7), 0);
  // The data went to the remote address, not into the receive buffer.
  for (int i = 0; i < 64; ++i) ASSERT_EQ(buf_b_[1024 + i], 0xee) << i;
}

TEST_F(RcPair, RdmaReadFetchesRemoteData) {
  for (int i = 0; i < 200; ++i) buf_b_[100 + i] = static_cast<uint8_t>(255 - i);
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_READ, 9, mr_a_, buf_a_ + 8, 200, IBV_SEND_SIGNALED,
                      addr_of(buf_b_ + 100), mr_b_->rkey),
            0);
  auto send = poll(cq_a_, 1);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(send[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(send[0].wr_id, 9u);
  EXPECT_EQ(send[0].qp_num, a_->qp_num);
  EXPECT_EQ(send[0].byte_len, 200u);
  EXPECT_EQ(std::memcmp(buf_a_ + 8, buf_b_ + 100, 200), 0);
  EXPECT_EQ(poll(cq_b_, 1, 5).size(), 0u);
}

class RcAtomic : public RcPair {
 protected:
  int atomic(ibv_wr_opcode opcode, uint64_t wr_id, uint64_t compare_add, uint64_t swap) {
    ibv_sge sge{addr_of(buf_a_), 8, mr_a_->lkey};
    ibv_send_wr wr = make_wr(wr_id, opcode, &sge, 1);
    wr.wr.atomic.remote_addr = addr_of(buf_b_ + 64);
    wr.wr.atomic.rkey = mr_b_->rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap = swap;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(a_, &wr, &bad);
  }
  uint64_t remote() {
    uint64_t v;
    std::memcpy(&v, buf_b_ + 64, 8);
    return v;
  }
  uint64_t local() {
    uint64_t v;
    std::memcpy(&v, buf_a_, 8);
    return v;
  }
  void set_remote(uint64_t v) { std::memcpy(buf_b_ + 64, &v, 8); }
};

TEST_F(RcAtomic, CompareAndSwapSwapsOnlyWhenEqualAndReturnsTheOriginal) {
  set_remote(42);
  ASSERT_EQ(atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 1, 7, 99), 0);  // not equal
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_COMP_SWAP);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(remote(), 42u);
  EXPECT_EQ(local(), 42u);

  std::memset(buf_a_, 0, 8);
  ASSERT_EQ(atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 2, 42, 99), 0);  // equal
  wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_COMP_SWAP);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(remote(), 99u);
  EXPECT_EQ(local(), 42u);
}

TEST_F(RcAtomic, FetchAndAddAddsAndReturnsTheOriginal) {
  set_remote(1000);
  ASSERT_EQ(atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 3, 25, 0), 0);
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_FETCH_ADD);
  EXPECT_EQ(wc[0].qp_num, a_->qp_num);
  EXPECT_EQ(remote(), 1025u);
  EXPECT_EQ(local(), 1000u);
}

TEST_F(RcPair, InlineSendCopiesUnregisteredDataAtPostTime) {
  // No receive yet: the SEND waits on RNR NAKs after the post returned, so
  // the data must have been copied by ibv_post_send itself.
  char text[32] = "inline-data";
  ibv_sge sge{addr_of(text), 12, 0};  // not registered, no lkey
  ibv_send_wr wr = make_wr(4, IBV_WR_SEND, &sge, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  std::memset(text, 'X', sizeof text);
  ASSERT_EQ(post_recv(b_, 8, mr_b_, buf_b_, 64), 0);
  auto send = poll(cq_a_, 1);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(send.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].byte_len, 12u);
  EXPECT_STREQ(reinterpret_cast<char*>(buf_b_), "inline-data");
}

TEST_F(RcPair, GatherOnSendAndScatterOnReceive) {
  std::memcpy(buf_a_ + 0, "AAAA", 4);
  std::memcpy(buf_a_ + 100, "BBBBBB", 6);
  std::memcpy(buf_a_ + 500, "CC", 2);
  ibv_sge rsge[3] = {{addr_of(buf_b_ + 10), 3, mr_b_->lkey},
                     {addr_of(buf_b_ + 200), 5, mr_b_->lkey},
                     {addr_of(buf_b_ + 900), 64, mr_b_->lkey}};
  ibv_recv_wr rwr{};
  rwr.wr_id = 1;
  rwr.sg_list = rsge;
  rwr.num_sge = 3;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  ibv_sge sge[3] = {{addr_of(buf_a_), 4, mr_a_->lkey},
                    {addr_of(buf_a_ + 100), 6, mr_a_->lkey},
                    {addr_of(buf_a_ + 500), 2, mr_a_->lkey}};
  ibv_send_wr wr = make_wr(2, IBV_WR_SEND, sge, 3);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].byte_len, 12u);
  // "AAAABBBBBBCC" split 3 / 5 / rest.
  EXPECT_EQ(std::memcmp(buf_b_ + 10, "AAA", 3), 0);
  EXPECT_EQ(std::memcmp(buf_b_ + 200, "ABBBB", 5), 0);
  EXPECT_EQ(std::memcmp(buf_b_ + 900, "BBCC", 4), 0);
  EXPECT_EQ(buf_b_[13], 0);
  EXPECT_EQ(buf_b_[205], 0);
  EXPECT_EQ(buf_b_[904], 0);
}

TEST_F(RcPair, OnlySignaledWrsComplete) {
  for (uint64_t id = 1; id <= 3; ++id) {
    std::memset(buf_a_ + id * 16, static_cast<int>(id), 16);
    ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, id, mr_a_, buf_a_ + id * 16, 16,
                        id == 2 ? IBV_SEND_SIGNALED : 0, addr_of(buf_b_ + id * 16), mr_b_->rkey),
              0);
  }
  auto wc = poll(cq_a_, 3, 20);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  // Every WR executed, signaled or not.
  for (int id = 1; id <= 3; ++id) EXPECT_EQ(buf_b_[id * 16 + 15], id);
}

TEST_F(RcPair, SqSigAllSignalsEveryWr) {
  ibv_qp* a = create_qp(IBV_QPT_RC, cq_a_, cq_a_, 16, nullptr, /*sq_sig_all=*/1);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq_b_, cq_b_, 16);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a, &q, IBV_QP_CAP, &init), 0);
  EXPECT_EQ(init.sq_sig_all, 1);
  ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  for (uint64_t id = 1; id <= 3; ++id)
    ASSERT_EQ(
        post_send(a, IBV_WR_RDMA_WRITE, id, mr_a_, buf_a_, 8, 0, addr_of(buf_b_), mr_b_->rkey), 0);
  auto wc = poll(cq_a_, 3);
  ASSERT_EQ(wc.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(wc[i].wr_id, i + 1);
    EXPECT_EQ(wc[i].qp_num, a->qp_num);
    EXPECT_EQ(wc[i].opcode, IBV_WC_RDMA_WRITE);
  }
}

TEST_F(RcPair, CompletionsFollowPostingOrderOnEachQueue) {
  constexpr int kRounds = 4;
  constexpr int kBatch = 16;
  uint64_t next_send = 0;
  uint64_t next_recv = 0;
  for (int round = 0; round < kRounds; ++round) {
    ibv_recv_wr rwr[kBatch]{};
    ibv_sge rsge[kBatch];
    ibv_send_wr wr[kBatch]{};
    ibv_sge sge[kBatch];
    for (int i = 0; i < kBatch; ++i) {
      const int n = round * kBatch + i;
      rsge[i] = {addr_of(buf_b_ + i * 64), 64, mr_b_->lkey};
      rwr[i].wr_id = 1000 + n;
      rwr[i].sg_list = &rsge[i];
      rwr[i].num_sge = 1;
      rwr[i].next = i + 1 < kBatch ? &rwr[i + 1] : nullptr;
      std::memset(buf_a_ + i * 64, n, 8);
      sge[i] = {addr_of(buf_a_ + i * 64), static_cast<uint32_t>(8 + i), mr_a_->lkey};
      wr[i] = make_wr(n, IBV_WR_SEND, &sge[i], 1);
      wr[i].next = i + 1 < kBatch ? &wr[i + 1] : nullptr;
    }
    ibv_recv_wr* rbad = nullptr;
    ASSERT_EQ(ibv_post_recv(b_, rwr, &rbad), 0);
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a_, wr, &bad), 0);
    auto sends = poll(cq_a_, kBatch);
    auto recvs = poll(cq_b_, kBatch);
    ASSERT_EQ(sends.size(), static_cast<size_t>(kBatch));
    ASSERT_EQ(recvs.size(), static_cast<size_t>(kBatch));
    for (int i = 0; i < kBatch; ++i) {
      EXPECT_EQ(sends[i].wr_id, next_send++);
      EXPECT_EQ(recvs[i].wr_id, 1000 + next_recv++);
      EXPECT_EQ(recvs[i].byte_len, static_cast<uint32_t>(8 + i));
      EXPECT_EQ(buf_b_[i * 64], static_cast<uint8_t>(round * kBatch + i));
    }
  }
}

// ---- UC --------------------------------------------------------------------

class UcPair : public RcPair {
 protected:
  void SetUp() override {
    RcPair::SetUp();
    if (HasFatalFailure()) return;
    uc_a_ = create_qp(IBV_QPT_UC, cq_a_, cq_a_);
    uc_b_ = create_qp(IBV_QPT_UC, cq_b_, cq_b_);
    ASSERT_NE(uc_a_, nullptr);
    ASSERT_NE(uc_b_, nullptr);
    ASSERT_EQ(rc_connect(uc_a_, {.dest_qp_num = uc_b_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    ASSERT_EQ(rc_connect(uc_b_, {.dest_qp_num = uc_a_->qp_num, .dlid = lid(), .grh = grh()}), 0);
  }
  ibv_qp* uc_a_ = nullptr;
  ibv_qp* uc_b_ = nullptr;
};

TEST_F(UcPair, SendMovesDataAndCompletesBothSides) {
  std::memcpy(buf_a_, "unreliable", 10);
  ASSERT_EQ(post_recv(uc_b_, 3, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_send(uc_a_, IBV_WR_SEND, 4, mr_a_, buf_a_, 10), 0);
  auto send = poll(cq_a_, 1);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(send.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(send[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(send[0].qp_num, uc_a_->qp_num);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(recv[0].wr_id, 3u);
  EXPECT_EQ(recv[0].byte_len, 10u);
  EXPECT_EQ(recv[0].qp_num, uc_b_->qp_num);
  EXPECT_EQ(std::memcmp(buf_b_, "unreliable", 10), 0);
}

TEST_F(UcPair, RdmaWriteMovesData) {
  std::memcpy(buf_a_, "uc-write", 8);
  ASSERT_EQ(post_send(uc_a_, IBV_WR_RDMA_WRITE, 5, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED,
                      addr_of(buf_b_ + 300), mr_b_->rkey),
            0);
  auto send = poll(cq_a_, 1);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(send[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(buf_b_ + 300, "uc-write", 8), 0);
}

TEST_F(UcPair, ReadAndAtomicsAreNotAllowedOnUc) {
  for (ibv_wr_opcode op :
       {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD}) {
    ibv_sge sge{addr_of(buf_a_), 8, mr_a_->lkey};
    ibv_send_wr wr = make_wr(1, op, &sge, 1);
    wr.wr.rdma.remote_addr = addr_of(buf_b_);
    wr.wr.rdma.rkey = mr_b_->rkey;
    if (op != IBV_WR_RDMA_READ) {
      wr.wr.atomic.remote_addr = addr_of(buf_b_);
      wr.wr.atomic.rkey = mr_b_->rkey;
    }
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(uc_a_, &wr, &bad), EINVAL) << op;
    EXPECT_EQ(bad, &wr);
  }
  EXPECT_EQ(poll(cq_a_, 1, 5).size(), 0u);
}

// ---- two devices -----------------------------------------------------------

class CrossDevice : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    ibv_device* other = nullptr;
    for (int i = 0; list_[i] != nullptr; ++i)
      if (std::string(ibv_get_device_name(list_[i])) == "vfsim1") other = list_[i];
    ASSERT_NE(other, nullptr) << "vfsim1 not listed: ctest runs sim_tests with "
                                 "VERBFAULT_SIM_DEVICES=2";
    ctx1_ = ibv_open_device(other);
    ASSERT_NE(ctx1_, nullptr);
    pd1_ = ibv_alloc_pd(ctx1_);
    ASSERT_NE(pd1_, nullptr);
    cq0_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    cq1_ = ibv_create_cq(ctx1_, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq0_, nullptr);
    ASSERT_NE(cq1_, nullptr);
    qp0_ = create_qp(IBV_QPT_RC, cq0_, cq0_);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq1_;
    init.qp_type = IBV_QPT_RC;
    init.cap = {16, 16, 4, 4, 64};
    qp1_ = ibv_create_qp(pd1_, &init);
    ASSERT_NE(qp0_, nullptr);
    ASSERT_NE(qp1_, nullptr);
    mr0_ = reg(buf0_, sizeof buf0_);
    mr1_ = ibv_reg_mr(pd1_, buf1_, sizeof buf1_,
                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    ASSERT_NE(mr1_, nullptr);
    lid0_ = lid(ctx_);
    lid1_ = lid(ctx1_);
    // Two ports, two addresses: LIDs on InfiniBand, GIDs on RoCE (no LIDs,
    // so both are 0 and slid below is 0 too, as rxe reports it).
    if (ethernet()) {
      const ibv_gid g0 = grh(ctx_).dgid, g1 = grh(ctx1_).dgid;
      ASSERT_NE(std::memcmp(&g0, &g1, sizeof g0), 0);
    } else {
      ASSERT_NE(lid0_, lid1_);
    }
    ASSERT_EQ(rc_connect(qp0_, {.dest_qp_num = qp1_->qp_num, .dlid = lid1_, .grh = grh(ctx1_)}), 0);
    ASSERT_EQ(rc_connect(qp1_, {.dest_qp_num = qp0_->qp_num, .dlid = lid0_, .grh = grh(ctx_)}), 0);
  }
  void TearDown() override {
    if (ctx1_ != nullptr) ibv_close_device(ctx1_);
    SimDevice::TearDown();
  }
  ibv_context* ctx1_ = nullptr;
  ibv_pd* pd1_ = nullptr;
  ibv_cq* cq0_ = nullptr;
  ibv_cq* cq1_ = nullptr;
  ibv_qp* qp0_ = nullptr;
  ibv_qp* qp1_ = nullptr;
  ibv_mr* mr0_ = nullptr;
  ibv_mr* mr1_ = nullptr;
  uint16_t lid0_ = 0;
  uint16_t lid1_ = 0;
  uint8_t buf0_[256] = {};
  uint8_t buf1_[256] = {};
};

TEST_F(CrossDevice, SendBothWaysCarriesTheOtherDevicesLid) {
  std::memcpy(buf0_, "from-vfsim0", 11);
  std::memcpy(buf1_, "from-vfsim1", 11);
  ASSERT_EQ(post_recv(qp1_, 1, mr1_, buf1_ + 128, 64), 0);
  ASSERT_EQ(post_recv(qp0_, 2, mr0_, buf0_ + 128, 64), 0);
  ASSERT_EQ(post_send(qp0_, IBV_WR_SEND, 3, mr0_, buf0_, 11), 0);
  ASSERT_EQ(post_send(qp1_, IBV_WR_SEND, 4, mr1_, buf1_, 11), 0);
  auto at0 = poll(cq0_, 2);
  auto at1 = poll(cq1_, 2);
  ASSERT_EQ(at0.size(), 2u);
  ASSERT_EQ(at1.size(), 2u);
  for (const ibv_wc* wc : {&at0[0], &at0[1], &at1[0], &at1[1]})
    EXPECT_EQ(wc->status, IBV_WC_SUCCESS);
  const ibv_wc& recv1 = at1[0].opcode == IBV_WC_RECV ? at1[0] : at1[1];
  const ibv_wc& recv0 = at0[0].opcode == IBV_WC_RECV ? at0[0] : at0[1];
  EXPECT_EQ(recv1.wr_id, 1u);
  EXPECT_EQ(recv1.slid, lid0_);
  EXPECT_EQ(recv1.src_qp, qp0_->qp_num);
  EXPECT_EQ(recv1.qp_num, qp1_->qp_num);
  EXPECT_EQ(recv0.wr_id, 2u);
  EXPECT_EQ(recv0.slid, lid1_);
  EXPECT_EQ(recv0.src_qp, qp1_->qp_num);
  EXPECT_EQ(std::memcmp(buf1_ + 128, "from-vfsim0", 11), 0);
  EXPECT_EQ(std::memcmp(buf0_ + 128, "from-vfsim1", 11), 0);
}

TEST_F(CrossDevice, RdmaWriteAndReadAcrossDevices) {
  std::memcpy(buf0_, "across", 6);
  ASSERT_EQ(post_send(qp0_, IBV_WR_RDMA_WRITE, 1, mr0_, buf0_, 6, IBV_SEND_SIGNALED,
                      addr_of(buf1_ + 50), mr1_->rkey),
            0);
  std::memcpy(buf1_ + 200, "readme", 6);
  ASSERT_EQ(post_send(qp0_, IBV_WR_RDMA_READ, 2, mr0_, buf0_ + 100, 6, IBV_SEND_SIGNALED,
                      addr_of(buf1_ + 200), mr1_->rkey),
            0);
  auto wc = poll(cq0_, 2);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(buf1_ + 50, "across", 6), 0);
  EXPECT_EQ(std::memcmp(buf0_ + 100, "readme", 6), 0);
}

// A port that is down neither sends nor receives: RC traffic from a device
// whose port is down, and to it, ends in retry exhaustion.
TEST_F(CrossDevice, RcTrafficFromOrToADownPortEndsInRetryExceeded) {
  struct PortUpAtExit {
    ibv_context* ctx;
    ~PortUpAtExit() { fabric::set_port_state(ctx, 1, IBV_PORT_ACTIVE); }
  } port_up{ctx_};
  ASSERT_EQ(fabric::set_port_state(ctx_, 1, IBV_PORT_DOWN), 0);  // vfsim0 only
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx1_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  // From vfsim0 (down) to vfsim1 (up).
  ASSERT_EQ(post_send(qp0_, IBV_WR_RDMA_WRITE, 1, mr0_, buf0_, 6, IBV_SEND_SIGNALED, addr_of(buf1_),
                      mr1_->rkey),
            0);
  auto wc = poll(cq0_, 1, 100);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
  // From vfsim1 (up) to vfsim0 (down).
  ASSERT_EQ(post_send(qp1_, IBV_WR_RDMA_WRITE, 2, mr1_, buf1_ + 100, 6, IBV_SEND_SIGNALED,
                      addr_of(buf0_ + 100), mr0_->rkey),
            0);
  wc = poll(cq1_, 1, 100);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
}

// ---- error basics ----------------------------------------------------------

TEST_F(RcPair, SendIntoTooSmallReceiveFailsBothSidesAndFlushesTheRest) {
  ASSERT_EQ(post_recv(b_, 10, mr_b_, buf_b_, 4), 0);  // too small
  ASSERT_EQ(post_recv(b_, 11, mr_b_, buf_b_ + 64, 64), 0);
  ibv_sge sge{addr_of(buf_a_), 16, mr_a_->lkey};
  ibv_send_wr wr[2] = {make_wr(20, IBV_WR_SEND, &sge, 1), make_wr(21, IBV_WR_SEND, &sge, 1, 0)};
  wr[0].next = &wr[1];
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, wr, &bad), 0);

  auto recv = poll(cq_b_, 2);
  ASSERT_EQ(recv.size(), 2u);
  EXPECT_EQ(recv[0].status, IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(recv[0].wr_id, 10u);
  EXPECT_EQ(recv[0].qp_num, b_->qp_num);
  expect_poisoned(recv[0]);
  EXPECT_EQ(recv[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(recv[1].wr_id, 11u);
  EXPECT_EQ(recv[1].qp_num, b_->qp_num);
  expect_poisoned(recv[1]);

  auto send = poll(cq_a_, 2);
  ASSERT_EQ(send.size(), 2u);
  EXPECT_EQ(send[0].status, IBV_WC_REM_INV_REQ_ERR);
  EXPECT_EQ(send[0].wr_id, 20u);
  EXPECT_EQ(send[0].qp_num, a_->qp_num);
  expect_poisoned(send[0]);
  // Flushed even though it was unsignaled.
  EXPECT_EQ(send[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(send[1].wr_id, 21u);
  expect_poisoned(send[1]);

  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);

  // Work posted later is flushed too, in order.
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 22, mr_a_, buf_a_, 4), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 23, mr_a_, buf_a_, 4, IBV_SEND_SIGNALED,
                      addr_of(buf_b_), mr_b_->rkey),
            0);
  ASSERT_EQ(post_recv(b_, 12, mr_b_, buf_b_, 64), 0);
  send = poll(cq_a_, 2);
  ASSERT_EQ(send.size(), 2u);
  EXPECT_EQ(send[0].wr_id, 22u);
  EXPECT_EQ(send[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(send[1].wr_id, 23u);
  EXPECT_EQ(send[1].status, IBV_WC_WR_FLUSH_ERR);
  recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wr_id, 12u);
  EXPECT_EQ(recv[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(std::memcmp(buf_b_ + 64, "\0\0\0\0", 4), 0);  // nothing delivered
}

TEST_F(RcPair, ModifyToErrFlushesOutstandingReceivesInOrder) {
  for (uint64_t id = 0; id < 6; ++id)
    ASSERT_EQ(post_recv(b_, 500 + id, mr_b_, buf_b_ + id * 32, 32), 0);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b_, &a, IBV_QP_STATE), 0);
  auto wc = poll(cq_b_, 6);
  ASSERT_EQ(wc.size(), 6u);
  for (uint64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(wc[i].wr_id, 500 + i);
    EXPECT_EQ(wc[i].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(wc[i].qp_num, b_->qp_num);
    expect_poisoned(wc[i]);
  }
  EXPECT_EQ(poll(cq_b_, 1, 5).size(), 0u);
}

TEST_F(RcPair, RdmaWriteWithBadRkeyIsRemoteAccessError) {
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 40, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED,
                      addr_of(buf_b_), mr_b_->rkey ^ 0xff00),
            0);
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(wc[0].wr_id, 40u);
  EXPECT_EQ(wc[0].qp_num, a_->qp_num);
  expect_poisoned(wc[0]);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
}

}  // namespace
}  // namespace verbfault::testing

// Completion queues of the simulated device: ibv_create_cq(3),
// ibv_resize_cq(3), ibv_destroy_cq(3), and CQs shared between QPs.
#include "verbs_fixture.h"

#include <cerrno>
#include <set>
#include <vector>

namespace verbfault::testing {
namespace {

class Cq : public SimDevice {
 protected:
  // An RC QP on (send_cq, recv_cq) connected to a peer on peer_cq_.
  struct Link {
    ibv_qp* local = nullptr;
    ibv_qp* peer = nullptr;
  };
  Link link(ibv_cq* send_cq, ibv_cq* recv_cq, uint32_t depth = 16) {
    Link l;
    if (peer_cq_ == nullptr) peer_cq_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
    EXPECT_NE(peer_cq_, nullptr);
    l.local = create_qp(IBV_QPT_RC, send_cq, recv_cq, depth);
    l.peer = create_qp(IBV_QPT_RC, peer_cq_, peer_cq_, depth);
    EXPECT_NE(l.local, nullptr);
    EXPECT_NE(l.peer, nullptr);
    if (l.local == nullptr || l.peer == nullptr) return l;
    EXPECT_EQ(rc_connect(l.local, {.dest_qp_num = l.peer->qp_num, .dlid = lid(), .grh = grh()}), 0);
    EXPECT_EQ(rc_connect(l.peer, {.dest_qp_num = l.local->qp_num, .dlid = lid(), .grh = grh()}), 0);
    return l;
  }
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    mr_ = reg(buf_, sizeof buf_);
    ASSERT_NE(mr_, nullptr);
  }
  // A signaled 8-byte RDMA WRITE from qp into buf_.
  int write(ibv_qp* qp, uint64_t wr_id) {
    return post_send(qp, IBV_WR_RDMA_WRITE, wr_id, mr_, buf_, 8, IBV_SEND_SIGNALED,
                     reinterpret_cast<uintptr_t>(buf_ + 2048), mr_->rkey);
  }
  int max_cqe() {
    ibv_device_attr attr{};
    EXPECT_EQ(ibv_query_device(ctx_, &attr), 0);
    return attr.max_cqe;
  }

  ibv_cq* peer_cq_ = nullptr;
  alignas(64) uint8_t buf_[4096] = {};
  ibv_mr* mr_ = nullptr;
};

TEST_F(Cq, CqeIsAtLeastTheRequestedSize) {
  int tag = 0;
  for (int cqe : {1, 16, 100, 4096}) {
    ibv_cq* cq = ibv_create_cq(ctx_, cqe, &tag, nullptr, 0);
    ASSERT_NE(cq, nullptr) << cqe;
    EXPECT_GE(cq->cqe, cqe);
    EXPECT_EQ(cq->context, ctx_);
    EXPECT_EQ(cq->cq_context, &tag);
    EXPECT_EQ(cq->channel, nullptr);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
  }
}

TEST_F(Cq, MaxCqeIsAccepted) {
  ibv_cq* cq = ibv_create_cq(ctx_, max_cqe(), nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_GE(cq->cqe, max_cqe());
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(Cq, ZeroOrNegativeCqeIsEinval) {
  for (int cqe : {0, -1}) {
    errno = 0;
    EXPECT_EQ(ibv_create_cq(ctx_, cqe, nullptr, nullptr, 0), nullptr) << cqe;
    EXPECT_EQ(errno, EINVAL) << cqe;
  }
}

TEST_F(Cq, CqeAboveMaxCqeIsEinval) {
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx_, max_cqe() + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(Cq, CompVectorOutOfRangeIsEinval) {
  // ibv_create_cq(3): 0 <= comp_vector < context->num_comp_vectors.
  ASSERT_GE(ctx_->num_comp_vectors, 1);
  for (int vector : {-1, ctx_->num_comp_vectors}) {
    errno = 0;
    EXPECT_EQ(ibv_create_cq(ctx_, 16, nullptr, nullptr, vector), nullptr) << vector;
    EXPECT_EQ(errno, EINVAL) << vector;
  }
}

TEST_F(Cq, PollingAnEmptyCqReturnsZero) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(cq, 4, wc), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(Cq, CreateCqExWithUnsupportedFieldsIsEopnotsupp) {
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 16;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP) << "no completion timestamps on the simulated device";
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
  attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP) << "no parent domains";
  attr.comp_mask = 0;
  attr.cqe = 0;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL) << "cqe 0, as for ibv_create_cq";
}

TEST_F(Cq, ExtendedPollApiReturnsEveryCompletionWithTheFieldsAskedFor) {
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 16;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
  ibv_cq_ex* cq_ex = ibv_create_cq_ex(ctx_, &attr);
  ASSERT_NE(cq_ex, nullptr);
  EXPECT_GE(cq_ex->cqe, 16);
  EXPECT_EQ(cq_ex->read_imm_data, nullptr) << "only the accessors asked for";
  ibv_cq* cq = ibv_cq_ex_to_cq(cq_ex);
  ibv_poll_cq_attr poll_attr{};
  EXPECT_EQ(ibv_start_poll(cq_ex, &poll_attr), ENOENT) << "empty CQ";
  Link l = link(cq, cq);
  ASSERT_NE(l.local, nullptr);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(write(l.local, 70 + i), 0);
  std::vector<uint64_t> wr_ids;
  ASSERT_EQ(ibv_start_poll(cq_ex, &poll_attr), 0);
  do {
    EXPECT_EQ(cq_ex->status, IBV_WC_SUCCESS);
    EXPECT_EQ(ibv_wc_read_opcode(cq_ex), IBV_WC_RDMA_WRITE);
    EXPECT_EQ(ibv_wc_read_byte_len(cq_ex), 8u);
    EXPECT_EQ(ibv_wc_read_qp_num(cq_ex), l.local->qp_num);
    EXPECT_EQ(ibv_wc_read_vendor_err(cq_ex), 0u);
    wr_ids.push_back(cq_ex->wr_id);
  } while (ibv_next_poll(cq_ex) == 0);
  ibv_end_poll(cq_ex);
  EXPECT_EQ(wr_ids, (std::vector<uint64_t>{70, 71, 72}));
  EXPECT_EQ(ibv_start_poll(cq_ex, &poll_attr), ENOENT) << "drained";
  poll_attr.comp_mask = 1;
  EXPECT_EQ(ibv_start_poll(cq_ex, &poll_attr), EINVAL) << "unknown comp_mask";
  EXPECT_EQ(ibv_destroy_qp(l.local), 0);
  EXPECT_EQ(ibv_destroy_qp(l.peer), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(Cq, ExtendedPollOfAnOverflowedCqFailsWithEio) {
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 1;
  ibv_cq_ex* cq_ex = ibv_create_cq_ex(ctx_, &attr);
  ASSERT_NE(cq_ex, nullptr);
  ibv_cq* cq = ibv_cq_ex_to_cq(cq_ex);
  Link l = link(cq, cq);
  ASSERT_NE(l.local, nullptr);
  for (uint64_t i = 0; i < 2; ++i) ASSERT_EQ(write(l.local, i), 0);  // one more than fits
  ibv_poll_cq_attr poll_attr{};
  EXPECT_EQ(ibv_start_poll(cq_ex, &poll_attr), EIO);
}

TEST_F(Cq, ResizeGrowsTheQueue) {
  ibv_cq* cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ASSERT_EQ(ibv_resize_cq(cq, 64), 0);
  EXPECT_GE(cq->cqe, 64);
  // More completions than the original size, none polled in between.
  Link l = link(cq, cq, 32);
  ASSERT_NE(l.local, nullptr);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_EQ(write(l.local, i), 0) << i;
  auto wc = poll(cq, 20);
  ASSERT_EQ(wc.size(), 20u);
  for (uint64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS) << i;
    EXPECT_EQ(wc[i].wr_id, i);
  }
}

TEST_F(Cq, ResizeKeepsQueuedCompletions) {
  ibv_cq* cq = ibv_create_cq(ctx_, 8, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  Link l = link(cq, cq);
  ASSERT_NE(l.local, nullptr);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(write(l.local, 100 + i), 0);
  ASSERT_EQ(ibv_resize_cq(cq, 128), 0);
  EXPECT_GE(cq->cqe, 128);
  auto wc = poll(cq, 3);
  ASSERT_EQ(wc.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(wc[i].wr_id, 100 + i);
}

TEST_F(Cq, ResizeToAnInvalidSizeIsEinval) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(ibv_resize_cq(cq, 0), EINVAL);
  EXPECT_EQ(ibv_resize_cq(cq, max_cqe() + 1), EINVAL);
  EXPECT_GE(cq->cqe, 16) << "a failed resize leaves the CQ as it was";
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(Cq, ResizeBelowTheUnpolledCountFails) {
  // ibv_resize_cq(3): cqe must be at least the number of unpolled entries.
  ibv_cq* cq = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  Link l = link(cq, cq);
  ASSERT_NE(l.local, nullptr);
  for (uint64_t i = 0; i < 10; ++i) ASSERT_EQ(write(l.local, i), 0);
  EXPECT_NE(ibv_resize_cq(cq, 5), 0);
  EXPECT_EQ(poll(cq, 10).size(), 10u) << "no completion was lost";
}

TEST_F(Cq, OneCqSharedBySeveralQpsCollectsAllTheirCompletions) {
  ibv_cq* shared = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
  ASSERT_NE(shared, nullptr);
  Link links[3];
  for (auto& l : links) {
    l = link(shared, shared);
    ASSERT_NE(l.local, nullptr);
  }
  std::set<uint32_t> send_qpns, recv_qpns;
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_EQ(write(links[i].local, i), 0);
    // And a receive on each: the peer sends to the QP on the shared CQ.
    ASSERT_EQ(post_recv(links[i].local, 10 + i, mr_, buf_ + 64 * i, 64), 0);
    ASSERT_EQ(post_send(links[i].peer, IBV_WR_SEND, 20 + i, mr_, buf_ + 1024, 8), 0);
  }
  auto wc = poll(shared, 6);
  ASSERT_EQ(wc.size(), 6u);
  for (const ibv_wc& w : wc) {
    EXPECT_EQ(w.status, IBV_WC_SUCCESS);
    if (w.opcode == IBV_WC_RDMA_WRITE) {
      ASSERT_LT(w.wr_id, 3u);
      EXPECT_EQ(w.qp_num, links[w.wr_id].local->qp_num);
      send_qpns.insert(w.qp_num);
    } else {
      EXPECT_EQ(w.opcode, IBV_WC_RECV);
      ASSERT_GE(w.wr_id, 10u);
      ASSERT_LT(w.wr_id, 13u);
      EXPECT_EQ(w.qp_num, links[w.wr_id - 10].local->qp_num);
      recv_qpns.insert(w.qp_num);
    }
  }
  EXPECT_EQ(send_qpns.size(), 3u);
  EXPECT_EQ(recv_qpns.size(), 3u);
}

TEST_F(Cq, SendAndReceiveCompletionsGoToTheirOwnCqs) {
  ibv_cq* send_cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* recv_cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(send_cq, nullptr);
  ASSERT_NE(recv_cq, nullptr);
  Link l = link(send_cq, recv_cq);
  ASSERT_NE(l.local, nullptr);
  ASSERT_EQ(write(l.local, 1), 0);
  ASSERT_EQ(post_recv(l.local, 2, mr_, buf_, 64), 0);
  ASSERT_EQ(post_send(l.peer, IBV_WR_SEND, 3, mr_, buf_ + 1024, 8), 0);
  auto sends = poll(send_cq, 2, 10);
  auto recvs = poll(recv_cq, 2, 10);
  ASSERT_EQ(sends.size(), 1u);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(sends[0].wr_id, 1u);
  EXPECT_EQ(recvs[0].wr_id, 2u);
}

TEST_F(Cq, DestroyWithAQpAttachedIsEbusy) {
  ibv_cq* send_cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* recv_cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(send_cq, nullptr);
  ASSERT_NE(recv_cq, nullptr);
  ibv_qp* qp = create_qp(IBV_QPT_RC, send_cq, recv_cq);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_destroy_cq(send_cq), EBUSY);
  EXPECT_EQ(ibv_destroy_cq(recv_cq), EBUSY);
  ASSERT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(send_cq), 0);
  EXPECT_EQ(ibv_destroy_cq(recv_cq), 0);
}

TEST_F(Cq, DestroyAfterEveryQpIsGoneEvenWithUnpolledCompletions) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  Link l = link(cq, cq);
  ASSERT_NE(l.local, nullptr);
  ASSERT_EQ(write(l.local, 1), 0);
  ASSERT_EQ(write(l.local, 2), 0);
  ASSERT_EQ(ibv_destroy_qp(l.local), 0);
  ibv_wc wc{};
  ASSERT_EQ(ibv_poll_cq(cq, 1, &wc), 1) << "completions outlive their QP";
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(ibv_destroy_cq(cq), 0) << "one completion still unpolled";
}

}  // namespace
}  // namespace verbfault::testing

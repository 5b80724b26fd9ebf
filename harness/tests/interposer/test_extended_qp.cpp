// QPs with the ibv_wr_* post API through the interposer: each builder call
// is a posted-WR opportunity like a WR of ibv_post_send, and the batch's
// faults take effect at ibv_wr_complete (ibv_wr_post(3): all or nothing).
#include "verbs_fixture.h"
#include "verbfault/session.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

class ExtendedQpFaults : public SimDevice {
 protected:
  void SetUp() override {}
  void TearDown() override {
    SimDevice::TearDown();
    session_.reset();
  }

  // The session, then cq#0 with qp#0 (ibv_wr_* API) connected to qp#1.
  void begin(const char* rules) {
    session_ = std::make_unique<Session>(parse_rules(rules, "test"), 1, Freedoms::canonical);
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq_, nullptr);
    ibv_qp_init_attr_ex attr{};
    attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.pd = pd_;
    attr.send_cq = attr.recv_cq = cq_;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 16;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    attr.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
    qp_ = ibv_create_qp_ex(ctx_, &attr);
    ASSERT_NE(qp_, nullptr);
    peer_ = create_qp(IBV_QPT_RC, cq_, cq_);
    ASSERT_NE(peer_, nullptr);
    ASSERT_EQ(rc_connect(qp_, {.dest_qp_num = peer_->qp_num, .dlid = lid()}), 0);
    ASSERT_EQ(rc_connect(peer_, {.dest_qp_num = qp_->qp_num, .dlid = lid()}), 0);
    qpx_ = ibv_qp_to_qp_ex(qp_);
    ASSERT_NE(qpx_, nullptr);
    mr_ = reg(buf_, sizeof buf_);
  }

  // One batch of RDMA WRITEs with the given wr_ids; every other one is
  // unsignaled. Returns ibv_wr_complete's result.
  int write_batch(const std::vector<uint64_t>& wr_ids) {
    ibv_wr_start(qpx_);
    for (size_t i = 0; i < wr_ids.size(); ++i) {
      qpx_->wr_id = wr_ids[i];
      qpx_->wr_flags = i % 2 == 0 ? IBV_SEND_SIGNALED : 0;
      ibv_wr_rdma_write(qpx_, mr_->rkey, reinterpret_cast<uintptr_t>(buf_ + 512));
      ibv_wr_set_sge(qpx_, mr_->lkey, reinterpret_cast<uintptr_t>(buf_), 8);
    }
    return ibv_wr_complete(qpx_);
  }

  std::vector<std::pair<uint64_t, ibv_wc_status>> completions(size_t count) {
    std::vector<std::pair<uint64_t, ibv_wc_status>> out;
    for (const ibv_wc& wc : poll(cq_, count, 50)) out.emplace_back(wc.wr_id, wc.status);
    return out;
  }

  size_t records_with(const std::string& text) const {
    size_t n = 0;
    for (const std::string& record : session_->trace())
      if (record.find(text) != std::string::npos) ++n;
    return n;
  }

  std::unique_ptr<Session> session_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_qp* peer_ = nullptr;
  ibv_qp_ex* qpx_ = nullptr;
  ibv_mr* mr_ = nullptr;
  alignas(64) uint8_t buf_[1024] = {};
};

TEST_F(ExtendedQpFaults, CompletionErrorOnAnUnsignaledBuilderIsForcedSignaledAndFlushesTheRest) {
  begin("completion_error(rem_access_err) qp#0 nth=2");
  ASSERT_EQ(write_batch({1, 2, 3, 4}), 0);
  EXPECT_EQ(qpx_->wr_flags, 0u) << "the application's last flags, not the forced signaled bit";
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {{1, IBV_WC_SUCCESS},
                                                                    {2, IBV_WC_REM_ACCESS_ERR},
                                                                    {3, IBV_WC_WR_FLUSH_ERR},
                                                                    {4, IBV_WC_WR_FLUSH_ERR}};
  EXPECT_EQ(completions(4), expected);
  EXPECT_EQ(state_of(qp_), IBV_QPS_ERR);
}

TEST_F(ExtendedQpFaults, VerbFailureFailsTheWholeBatchAndPostsNothing) {
  begin("verb_failure(post_send,ENOMEM) qp#0 nth=2");
  EXPECT_EQ(write_batch({1, 2, 3}), ENOMEM);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_, 1, &wc), 0) << "ibv_wr_post(3): the entire posting is aborted";
  ASSERT_EQ(write_batch({4}), 0) << "the next batch goes through";
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {{4, IBV_WC_SUCCESS}};
  EXPECT_EQ(completions(1), expected);
  EXPECT_EQ(records_with("\"call\":\"wr_complete\""), 2u);
  EXPECT_EQ(records_with("\"ret\":12"), 1u) << "the failed batch is traced with ENOMEM";
}

TEST_F(ExtendedQpFaults, FlushMovesTheQpToErrAndFlushesTheBatch) {
  begin("flush qp#0 nth=2");
  ASSERT_EQ(write_batch({1, 2, 3}), 0);
  const auto got = completions(3);
  ASSERT_EQ(got.size(), 3u) << "flushed WRs complete even when unsignaled";
  for (const auto& [wr_id, status] : got) EXPECT_EQ(status, IBV_WC_WR_FLUSH_ERR) << wr_id;
  EXPECT_EQ(state_of(qp_), IBV_QPS_ERR);
}

TEST_F(ExtendedQpFaults, AnAbortedBatchLeavesNoDoomedWorkBehind) {
  begin("completion_error(rem_access_err) qp#0 nth=1");
  ibv_wr_start(qpx_);
  qpx_->wr_id = 7;
  qpx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qpx_, mr_->rkey, reinterpret_cast<uintptr_t>(buf_ + 512));
  ibv_wr_set_sge(qpx_, mr_->lkey, reinterpret_cast<uintptr_t>(buf_), 8);
  ibv_wr_abort(qpx_);
  ASSERT_EQ(write_batch({7}), 0) << "same wr_id, a new WR";
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {{7, IBV_WC_SUCCESS}};
  EXPECT_EQ(completions(1), expected) << "the aborted WR's fault does not hit the new one";
}

TEST_F(ExtendedQpFaults, TheChecksSeeTheBuildersToo) {
  begin("");
  ibv_wr_start(qpx_);
  for (uint64_t i = 0; i < 16; ++i) {  // max_send_wr unsignaled writes in a row
    qpx_->wr_id = i;
    qpx_->wr_flags = 0;
    ibv_wr_rdma_write(qpx_, mr_->rkey, reinterpret_cast<uintptr_t>(buf_ + 512));
    ibv_wr_set_sge(qpx_, mr_->lkey, reinterpret_cast<uintptr_t>(buf_), 8);
  }
  EXPECT_EQ(ibv_wr_complete(qpx_), 0);
  std::vector<std::string> checks;
  for (const Finding& f : session_->findings()) checks.push_back(f.check);
  EXPECT_EQ(checks, std::vector<std::string>{"resource.unsignaled_sends_fill_queue"});
}

}  // namespace
}  // namespace verbfault::testing

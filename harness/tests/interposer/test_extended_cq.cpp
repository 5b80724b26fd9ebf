// Extended CQs (ibv_create_cq_ex(3)) through the interposer: the CQ is
// named and traced like any other, and faults reach the application through
// ibv_start_poll / ibv_next_poll as they do through ibv_poll_cq. Without a
// plan the provider's CQ is untouched.
#include "verbs_fixture.h"
#include "verbfault/session.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

class ExtendedCq : public SimDevice {
 protected:
  void SetUp() override {}
  void TearDown() override {
    SimDevice::TearDown();
    session_.reset();
  }

  // Opens the session (if `rules` is given), the device, an extended CQ
  // (cq#0) for qp#0 and a plain CQ (cq#1) for its peer qp#1.
  void begin(const char* rules, std::uint64_t wc_flags = IBV_WC_EX_WITH_BYTE_LEN) {
    if (rules != nullptr)
      session_ = std::make_unique<Session>(parse_rules(rules, "test"), 1, Freedoms::canonical);
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    ibv_cq_init_attr_ex attr{};
    attr.cqe = 16;
    attr.wc_flags = wc_flags;
    cq_ex_ = ibv_create_cq_ex(ctx_, &attr);
    ASSERT_NE(cq_ex_, nullptr);
    peer_cq_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    a_ = create_qp(IBV_QPT_RC, ibv_cq_ex_to_cq(cq_ex_), ibv_cq_ex_to_cq(cq_ex_));
    b_ = create_qp(IBV_QPT_RC, peer_cq_, peer_cq_);
    ASSERT_TRUE(peer_cq_ && a_ && b_);
    ASSERT_EQ(rc_connect(a_, {.dest_qp_num = b_->qp_num, .dlid = lid()}), 0);
    ASSERT_EQ(rc_connect(b_, {.dest_qp_num = a_->qp_num, .dlid = lid()}), 0);
    mr_ = reg(buf_, sizeof buf_);
  }

  int write(uint64_t wr_id) {
    return post_send(a_, IBV_WR_RDMA_WRITE, wr_id, mr_, buf_, 8, IBV_SEND_SIGNALED,
                     reinterpret_cast<uintptr_t>(buf_ + 512), mr_->rkey);
  }

  // Every completion the extended poll API hands out: (wr_id, status).
  std::vector<std::pair<uint64_t, ibv_wc_status>> drain() {
    std::vector<std::pair<uint64_t, ibv_wc_status>> out;
    ibv_poll_cq_attr attr{};
    if (ibv_start_poll(cq_ex_, &attr) != 0) return out;
    do out.emplace_back(cq_ex_->wr_id, cq_ex_->status);
    while (ibv_next_poll(cq_ex_) == 0);
    ibv_end_poll(cq_ex_);
    return out;
  }

  std::unique_ptr<Session> session_;
  ibv_cq_ex* cq_ex_ = nullptr;
  ibv_cq* peer_cq_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
  ibv_mr* mr_ = nullptr;
  alignas(64) uint8_t buf_[1024] = {};
};

TEST_F(ExtendedCq, CompletionErrorReachesTheExtendedPollApiAndFlushesWhatFollows) {
  begin("completion_error(rem_access_err) qp#0 nth=2");
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(write(10 + i), 0);
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {
      {10, IBV_WC_SUCCESS}, {11, IBV_WC_REM_ACCESS_ERR}, {12, IBV_WC_WR_FLUSH_ERR}};
  EXPECT_EQ(drain(), expected);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(session_->fired()[0], 1u);
  size_t polls = 0;
  for (const std::string& record : session_->trace())
    if (record.find("\"obj\":\"cq#0\"") != std::string::npos &&
        (record.find("\"start_poll\"") != std::string::npos ||
         record.find("\"next_poll\"") != std::string::npos))
      ++polls;
  EXPECT_EQ(polls, 4u) << "start_poll + three next_poll (the last one ENOENT)";
}

TEST_F(ExtendedCq, AnInjectedErrorIsPoisonedInTheReadAccessorsToo) {
  begin("completion_error(loc_prot_err) qp#0 nth=1");
  ASSERT_EQ(write(1), 0);
  ibv_poll_cq_attr attr{};
  ASSERT_EQ(ibv_start_poll(cq_ex_, &attr), 0);
  EXPECT_EQ(cq_ex_->status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(cq_ex_->wr_id, 1u);
  EXPECT_EQ(ibv_wc_read_vendor_err(cq_ex_), 0x1f0u) << "the harness's vendor syndrome";
  EXPECT_EQ(static_cast<uint32_t>(ibv_wc_read_opcode(cq_ex_)), 0xa5a5a5a5u)
      << "an error completion's opcode is undefined (ibv_poll_cq(3)): poisoned";
  EXPECT_EQ(ibv_wc_read_byte_len(cq_ex_), 0xa5a5a5a5u);
  ibv_end_poll(cq_ex_);
}

TEST_F(ExtendedCq, DelayedCompletionIsServedOnALaterStartPoll) {
  begin("delayed_completion(2) cq#0 nth=1");
  ASSERT_EQ(write(1), 0);
  ASSERT_EQ(write(2), 0);
  ibv_poll_cq_attr attr{};
  EXPECT_EQ(ibv_start_poll(cq_ex_, &attr), ENOENT) << "held back (no end_poll owed)";
  EXPECT_EQ(ibv_start_poll(cq_ex_, &attr), ENOENT) << "one poll to go";
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {{1, IBV_WC_SUCCESS},
                                                                    {2, IBV_WC_SUCCESS}};
  EXPECT_EQ(drain(), expected) << "the held one first, then the provider's, in order";
  EXPECT_EQ(session_->fired()[0], 1u);
}

TEST_F(ExtendedCq, InjectedOverflowFailsTheExtendedPoll) {
  // The overflow is decided at ibv_poll_cq calls; the extended poll of the
  // same CQ then fails too.
  begin("cq_overflow cq#0 nth=1");
  ibv_wc wc;
  EXPECT_LT(ibv_poll_cq(ibv_cq_ex_to_cq(cq_ex_), 1, &wc), 0);
  ibv_poll_cq_attr attr{};
  EXPECT_EQ(ibv_start_poll(cq_ex_, &attr), EIO);
}

TEST_F(ExtendedCq, VerbFailureOfCreateCqAppliesToCreateCqEx) {
  session_ = std::make_unique<Session>(parse_rules("verb_failure(create_cq,ENOMEM)", "test"), 1);
  SimDevice::SetUp();
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 4;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, ENOMEM);
}

TEST_F(ExtendedCq, WithoutAPlanTheProvidersCqIsUntouched) {
  begin(nullptr, IBV_WC_EX_WITH_BYTE_LEN);
  EXPECT_EQ(cq_ex_->read_qp_num, nullptr) << "no field the application did not ask for";
  ASSERT_EQ(write(1), 0);
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {{1, IBV_WC_SUCCESS}};
  EXPECT_EQ(drain(), expected);
}

}  // namespace
}  // namespace verbfault::testing

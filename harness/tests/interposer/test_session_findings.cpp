// The runtime checks through a Session: findings in process, and outcomes
// the code under test reports (Session::report_outcome).
#include "fault_fixture.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

using SessionFindings = FaultPair;

std::vector<std::string> checks_of(const Session& session) {
  std::vector<std::string> checks;
  for (const Finding& finding : session.findings()) checks.push_back(finding.check);
  return checks;
}

TEST_F(SessionFindings, AFlushReportedAsASuccessIsAFinding) {
  begin("flush qp#0 nth=2");
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(write_a_to_b(2), 0);  // flushed
  auto wc = poll(cq_a_, 2);
  ASSERT_EQ(wc.size(), 2u);
  ASSERT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
  session_->report_outcome(a_, 1, true);   // true: it succeeded
  session_->report_outcome(a_, 2, false);  // true: it failed
  EXPECT_TRUE(checks_of(*session_).empty());
  session_->report_outcome(a_, 2, true);  // false
  const std::vector<Finding> findings = session_->findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "error.failure_reported_as_success");
  EXPECT_EQ(findings[0].object, "qp#0");
  EXPECT_NE(findings[0].message.find("work request 2"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].replay.find("VERBFAULT_FAULTS='flush qp#0 nth=2'"), std::string::npos)
      << findings[0].replay;
}

TEST_F(SessionFindings, ACqTooSmallForItsQpsIsFoundWhenTheQpIsCreated) {
  begin("");
  ibv_cq* small = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(small, nullptr);
  ibv_qp* qp = create_qp(IBV_QPT_RC, small, small, 16);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(checks_of(*session_), std::vector<std::string>{"resource.cq_too_small"});
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(small), 0);
}

TEST_F(SessionFindings, EachMistakeIsReportedOncePerObject) {
  begin("", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ibv_cq* cq = try_get_event();
  ASSERT_EQ(cq, cq_a_);
  ibv_ack_cq_events(cq_a_, 2);  // one too many
  ibv_ack_cq_events(cq_a_, 1);  // and again
  EXPECT_EQ(checks_of(*session_), std::vector<std::string>{"ack.cq_events_overacked"});
}

// Without a configuration a context keeps the provider's own fast paths;
// a Session opened later installs the trampolines into it, so the fast-path
// faults reach a device opened before the session too.
class LateSession : public FaultPair {};

TEST_F(LateSession, FastPathFaultsReachADeviceOpenedBeforeTheSession) {
  SimDevice::SetUp();  // no session yet: the device is opened with the harness off
  ASSERT_FALSE(HasFatalFailure());
  build_pair(nullptr, &tag_a_, &tag_b_);
  ASSERT_FALSE(HasFatalFailure());
  ibv_wc wc[2];
  EXPECT_EQ(ibv_poll_cq(cq_a_, 2, wc), 0);
  session_ =
      std::make_unique<Session>(parse_rules("verb_failure(poll_cq,EAGAIN) nth=1", "test"), 1);
  EXPECT_EQ(ibv_poll_cq(cq_a_, 2, wc), -EAGAIN) << "the trampoline decides this poll";
  EXPECT_EQ(ibv_poll_cq(cq_a_, 2, wc), 0);
  EXPECT_EQ(session_->fired()[0], 1u);
}

}  // namespace
}  // namespace verbfault::testing

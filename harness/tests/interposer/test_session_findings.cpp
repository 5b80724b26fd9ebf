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

TEST_F(SessionFindings, ACqTooSmallForItsQpsIsFoundWhenTheQpPostsWork) {
  begin("");
  ibv_cq* small = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(small, nullptr);
  ibv_qp* qp = create_qp(IBV_QPT_RC, small, small, 16);
  ASSERT_NE(qp, nullptr);
  EXPECT_TRUE(checks_of(*session_).empty()) << "nothing posted yet: nothing can overflow";
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  ASSERT_EQ(ibv_modify_qp(qp, &init,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
            0);
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
  EXPECT_EQ(checks_of(*session_), std::vector<std::string>{"resource.cq_too_small"});
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(small), 0);
}

// UCX, libfabric and Open MPI probe a device's limits with QPs on a
// 1-entry CQ that they destroy unused: no finding of the application's.
TEST_F(SessionFindings, AQpDestroyedUnusedLeavesItsSmallCqUnjudged) {
  begin("");
  ibv_cq* probe_cq = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
  ASSERT_NE(probe_cq, nullptr);
  ibv_qp* probe = create_qp(IBV_QPT_RC, probe_cq, probe_cq, 1);
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(ibv_destroy_qp(probe), 0);
  EXPECT_EQ(ibv_destroy_cq(probe_cq), 0);
  EXPECT_TRUE(checks_of(*session_).empty());
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

// poll.wait_without_drain counts the completions a CQ held when it was
// re-armed and that no poll since has returned: a completion that arrives
// after the re-arm is not one of them, it raises the next event
// (ibv_req_notify_cq(3), IBA 11.4.2.2).
TEST_F(SessionFindings, ACompletionThatArrivesAfterTheReArmIsNotStranded) {
  begin("", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ibv_cq* cq = try_get_event();
  ASSERT_EQ(cq, cq_a_);
  ibv_ack_cq_events(cq, 1);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);  // holds write 1
  ibv_wc wc[4];
  ASSERT_EQ(ibv_poll_cq(cq_a_, 4, wc), 1);  // fewer than asked: the CQ is empty
  ASSERT_EQ(write_a_to_b(2), 0);            // after the re-arm: its event is raised
  cq = try_get_event();                     // the checks look before the wait
  EXPECT_TRUE(checks_of(*session_).empty());
  if (cq != nullptr) ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
}

TEST_F(SessionFindings, ACompletionHeldAtTheReArmAndNotPolledIsStranded) {
  begin("", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(write_a_to_b(2), 0);
  ibv_cq* cq = try_get_event();
  ASSERT_EQ(cq, cq_a_);
  ibv_ack_cq_events(cq, 1);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);  // holds writes 1 and 2
  ibv_wc wc[1];
  ASSERT_EQ(ibv_poll_cq(cq_a_, 1, wc), 1);  // write 2 is left
  ASSERT_EQ(write_a_to_b(3), 0);            // its event does not excuse write 2
  cq = try_get_event();
  EXPECT_EQ(checks_of(*session_), std::vector<std::string>{"poll.wait_without_drain"});
  const std::vector<Finding> findings = session_->findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].message.find("still holds 1 completion(s) it held when re-armed"),
            std::string::npos)
      << findings[0].message;
  if (cq != nullptr) ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(poll(cq_a_, 2).size(), 2u);
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

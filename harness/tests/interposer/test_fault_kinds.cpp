// Each fault kind injected on the simulated device through a Session,
// checked by the whole chain the application observes through
// <infiniband/verbs.h>.
#include "fault_fixture.h"
#include "verbfault/fabric.h"

#include <poll.h>

#include <cerrno>

namespace verbfault::testing {
namespace {

constexpr uint32_t kPoison32 = 0xa5a5a5a5;

class FaultKinds : public FaultPair {};

// The next async event of ctx_, or IBV_EVENT_CQ_ERR - 1000 when none is
// queued (the async fd is switched to non-blocking).
struct AsyncEvent {
  bool got = false;
  ibv_async_event event{};
};
AsyncEvent next_async(ibv_context* ctx) {
  const int flags = fcntl(ctx->async_fd, F_GETFL);
  fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
  AsyncEvent out;
  if (ibv_get_async_event(ctx, &out.event) == 0) {
    out.got = true;
    ibv_ack_async_event(&out.event);
  }
  return out;
}

TEST_F(FaultKinds, EmptyPlanChangesNothingButTraces) {
  begin("");
  ASSERT_EQ(recv_on_b(7), 0);
  ASSERT_EQ(send_a_to_b(1), 0);
  auto a = poll(cq_a_, 1);
  auto b = poll(cq_b_, 1);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(b[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(b[0].wr_id, 7u);
  EXPECT_EQ(records_with("\"fault\""), 0u);
  EXPECT_EQ(records_with("\"call\":\"post_send\""), 1u);
  EXPECT_EQ(records_with("\"obj\":\"qp#0\""), records_with("\"obj\":\"qp#0\""));
}

TEST_F(FaultKinds, FlushMovesTheQpToErrorBeforeTheChosenWorkRequest) {
  begin("flush qp#0 nth=2");
  ASSERT_EQ(recv_on_b(1), 0);
  ASSERT_EQ(recv_on_b(2), 0);
  ASSERT_EQ(send_a_to_b(10), 0);  // opportunity 1: sent
  ASSERT_EQ(send_a_to_b(11), 0);  // opportunity 2: QP to ERR first, then flushed
  auto a = poll(cq_a_, 2);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].wr_id, 10u);
  EXPECT_EQ(a[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(a[1].wr_id, 11u);
  EXPECT_EQ(a[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);
  EXPECT_EQ(session_->fired()[0], 1u);
  EXPECT_EQ(records_with("\"fault\":\"flush\",\"rule\":0,\"level\":\"cause\""), 1u);
}

TEST_F(FaultKinds, CompletionErrorPoisonsTheCompletionAndFlushesWhatFollows) {
  begin("completion_error(rem_access_err) qp#0 opcode=rdma_write nth=1");
  // An unsignaled WRITE (its error completion is reported anyway), then a
  // signaled WRITE behind it.
  ASSERT_EQ(write_a_to_b(20, 0), 0);
  ASSERT_EQ(write_a_to_b(21), 0);
  auto a = poll(cq_a_, 2);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].wr_id, 20u);
  EXPECT_EQ(a[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(a[0].qp_num, a_->qp_num);
  EXPECT_EQ(a[0].byte_len, kPoison32);
  EXPECT_EQ(a[0].src_qp, kPoison32);
  EXPECT_EQ(a[1].wr_id, 21u);
  EXPECT_EQ(a[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  // Later work is flushed by the device itself.
  ASSERT_EQ(write_a_to_b(22), 0);
  auto later = poll(cq_a_, 1);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(FaultKinds, VerbFailureOfPostSendPointsBadWrAtTheFailedRequest) {
  begin("verb_failure(post_send,ENOMEM) qp#0 nth=2");
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wr[3]{};
  for (int i = 0; i < 3; ++i) {
    wr[i].wr_id = 30 + i;
    wr[i].sg_list = &sge;
    wr[i].num_sge = 1;
    wr[i].opcode = IBV_WR_RDMA_WRITE;
    wr[i].send_flags = IBV_SEND_SIGNALED;
    wr[i].wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf_b_);
    wr[i].wr.rdma.rkey = mr_b_->rkey;
    wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, wr, &bad), ENOMEM);
  EXPECT_EQ(bad, &wr[1]);
  // The WR before bad_wr was posted, the ones from bad_wr on were not.
  auto a = poll(cq_a_, 3, 50);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].wr_id, 30u);
  EXPECT_EQ(a[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
}

TEST_F(FaultKinds, VerbFailureOfCreateQpSetsErrno) {
  begin("verb_failure(create_qp,ENOMEM) nth=3");  // a_ and b_ are the first two
  errno = 0;
  EXPECT_EQ(create_qp(IBV_QPT_RC, cq_a_, cq_a_), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  ibv_qp* fourth = create_qp(IBV_QPT_RC, cq_a_, cq_a_);
  ASSERT_NE(fourth, nullptr);
  EXPECT_EQ(ibv_destroy_qp(fourth), 0);
}

TEST_F(FaultKinds, PartialPollReturnsFewerButLosesNothing) {
  begin("partial_poll cq#0 always");
  for (uint64_t i = 0; i < 6; ++i) ASSERT_EQ(write_a_to_b(40 + i), 0);
  std::vector<ibv_wc> all;
  int polls = 0;
  while (all.size() < 6 && polls < 100) {
    ibv_wc wc[6];
    int n = ibv_poll_cq(cq_a_, 6, wc);
    ASSERT_GE(n, 0);
    EXPECT_LT(n, 6) << "a partial poll returns fewer than asked for";
    all.insert(all.end(), wc, wc + n);
    ++polls;
  }
  ASSERT_EQ(all.size(), 6u);
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(all[i].wr_id, 40 + i);
  EXPECT_GT(polls, 1);
}

TEST_F(FaultKinds, DelayedCompletionAppearsAfterThePolls) {
  begin("delayed_completion(3) cq#0 nth=1");
  ASSERT_EQ(write_a_to_b(50), 0);
  ASSERT_EQ(write_a_to_b(51), 0);
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(cq_a_, 4, wc), 0);  // found, held back
  EXPECT_EQ(ibv_poll_cq(cq_a_, 4, wc), 0);
  EXPECT_EQ(ibv_poll_cq(cq_a_, 4, wc), 0);
  ASSERT_EQ(ibv_poll_cq(cq_a_, 4, wc), 2);  // the third poll after: in order
  EXPECT_EQ(wc[0].wr_id, 50u);
  EXPECT_EQ(wc[1].wr_id, 51u);
}

// docs/fault-kinds.md, delayed_completion: held until just after the next empty poll of
// its CQ, so it lands between that poll and the thread's arm. The arm then
// raises no event for it (IBA 11.4.2.2: an arm covers the next completion
// only); a poll after the arm finds it.
TEST_F(FaultKinds, DelayedCompletionLandsBetweenTheEmptyPollAndTheArm) {
  begin("delayed_completion(1) cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(write_a_to_b(80), 0);
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(cq_a_, 4, wc), 0);  // held back; released just after
  EXPECT_EQ(records_with("\"held\":1,\"visible\":\"after_empty_poll\""), 1u);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr) << "it came before the arm: no event";
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(ibv_poll_cq(cq_a_, 4, wc), 1);
  EXPECT_EQ(wc[0].wr_id, 80u);
}

// Only empty polls count: a poll that returns the completions before the
// held one does not release it.
TEST_F(FaultKinds, DelayedCompletionWaitsForAnEmptyPoll) {
  begin("delayed_completion(1) cq#0 nth=2");
  ASSERT_EQ(write_a_to_b(90), 0);
  ASSERT_EQ(write_a_to_b(91), 0);
  ibv_wc wc[4];
  ASSERT_EQ(ibv_poll_cq(cq_a_, 4, wc), 1);  // 91 held behind 90
  EXPECT_EQ(wc[0].wr_id, 90u);
  EXPECT_EQ(ibv_poll_cq(cq_a_, 4, wc), 0);  // the empty poll: released after it
  ASSERT_EQ(ibv_poll_cq(cq_a_, 4, wc), 1);
  EXPECT_EQ(wc[0].wr_id, 91u);
}

// A thread that waits on the channel while the completion is still held
// gets it with an event when the CQ is armed: it arrives during the wait.
TEST_F(FaultKinds, DelayedCompletionStillHeldArrivesDuringAWait) {
  begin("delayed_completion(2) cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(write_a_to_b(95), 0);
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(cq_a_, 4, wc), 0);  // held for one more empty poll
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  EXPECT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
  ASSERT_EQ(ibv_poll_cq(cq_a_, 4, wc), 1);
  EXPECT_EQ(wc[0].wr_id, 95u);
}

TEST_F(FaultKinds, DroppedCqEventLeavesTheWaiterWithoutAWakeup) {
  begin("drop_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(60), 0);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  // The completion is there; the dropped event was acknowledged by the
  // harness, so destroy does not wait for it.
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
  EXPECT_EQ(ibv_destroy_qp(a_), 0);
  EXPECT_EQ(ibv_destroy_cq(cq_a_), 0);
  EXPECT_EQ(session_->fired()[0], 1u);
}

TEST_F(FaultKinds, SpuriousCqEventComesWithoutACompletion) {
  begin("spurious_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  EXPECT_TRUE(readable());
  void* context = nullptr;
  EXPECT_EQ(try_get_event(&context), cq_a_);
  EXPECT_EQ(context, &tag_a_);
  ibv_ack_cq_events(cq_a_, 1);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_a_, 1, &wc), 0);
  EXPECT_EQ(records_with("\"fault\":\"spurious_cq_event\",\"rule\":0,\"level\":\"cause\""), 1u);
  EXPECT_EQ(ibv_destroy_qp(a_), 0);
  EXPECT_EQ(ibv_destroy_cq(cq_a_), 0);
}

TEST_F(FaultKinds, CoalescedCqEventAbsorbsTheNextOne) {
  begin("coalesce_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(70), 0);
  ASSERT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
  // Re-armed before draining: the next completion's event merges into the
  // one already delivered.
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(71), 0);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(poll(cq_a_, 2).size(), 2u);
}

TEST_F(FaultKinds, CqOverflowPutsTheCqInErrorWithItsChain) {
  begin("cq_overflow cq#0 nth=1");
  ibv_wc wc;
  EXPECT_LT(ibv_poll_cq(cq_a_, 1, &wc), 0);
  AsyncEvent first = next_async(ctx_);
  ASSERT_TRUE(first.got);
  EXPECT_EQ(first.event.event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(first.event.element.cq, cq_a_);
  AsyncEvent second = next_async(ctx_);
  ASSERT_TRUE(second.got);
  EXPECT_EQ(second.event.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(second.event.element.qp, a_);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_LT(ibv_poll_cq(cq_a_, 1, &wc), 0);
}

TEST_F(FaultKinds, AsyncQpFatalMovesTheQpToError) {
  // Calls on qp#0: three modify_qp to connect it, then the post.
  begin("async_event(qp_fatal) qp#0 nth=4");
  ASSERT_EQ(send_a_to_b(80), 0);
  AsyncEvent event = next_async(ctx_);
  ASSERT_TRUE(event.got);
  EXPECT_EQ(event.event.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(event.event.element.qp, a_);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  auto a = poll(cq_a_, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(FaultKinds, PortDownEndsRcTrafficInRetryExhaustion) {
  // Calls on qp#1: three modify_qp to connect it, then the post.
  begin("port_down qp#1 nth=4");
  ASSERT_EQ(recv_on_b(1), 0);
  AsyncEvent event = next_async(ctx_);
  ASSERT_TRUE(event.got);
  EXPECT_EQ(event.event.event_type, IBV_EVENT_PORT_ERR);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_DOWN);
  ASSERT_EQ(send_a_to_b(90), 0);
  auto a = poll(cq_a_, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  // The port is the device's: up again for the tests that follow.
  EXPECT_EQ(fabric::set_port_state(ctx_, 1, IBV_PORT_ACTIVE), 0);
}

TEST_F(FaultKinds, DeviceFatalMakesLaterVerbsFailWithEio) {
  begin("device_fatal qp#1 nth=4");
  // The post that raises it is the first verb to fail.
  EXPECT_EQ(recv_on_b(1), EIO);
  AsyncEvent event = next_async(ctx_);
  ASSERT_TRUE(event.got);
  EXPECT_EQ(event.event.event_type, IBV_EVENT_DEVICE_FATAL);
  errno = 0;
  EXPECT_EQ(ibv_alloc_pd(ctx_), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
}

// fuzz_verbs_sequence (CI, 2026-11-27): a post that carries an injected
// failure, on a device already dead, failed with EIO and left *bad_wr
// NULL. ibv_post_send(3): on failure *bad_wr is the first WR not posted.
TEST_F(FaultKinds, APostWithAnInjectedFailureOnADeadDeviceNamesItsFirstWr) {
  begin("retry_exhausted qp#0 nth=1");
  ASSERT_EQ(fabric::device_fatal(ctx_), 0);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wrs[2]{};
  wrs[0].next = &wrs[1];
  for (ibv_send_wr& wr : wrs) {
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
  }
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, wrs, &bad), EIO);
  EXPECT_EQ(bad, &wrs[0]);
}

TEST_F(FaultKinds, RnrRetryExhaustedFailsTheSendAndFlushesTheRest) {
  begin("rnr_retry_exhausted qp#0 opcode=send nth=1");
  ASSERT_EQ(recv_on_b(1), 0);
  ASSERT_EQ(send_a_to_b(100), 0);
  ASSERT_EQ(send_a_to_b(101), 0);
  auto a = poll(cq_a_, 2);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].wr_id, 100u);
  EXPECT_EQ(a[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(a[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  // The responder stays in RTS and never saw the message: the device
  // really NAKed it (cause level), its receive is still posted.
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_b_, 1, &wc), 0);
  EXPECT_EQ(records_with("\"fault\":\"rnr_retry_exhausted\",\"rule\":0,\"level\":\"cause\""), 1u);
}

TEST_F(FaultKinds, RetryExhaustedFailsTheSend) {
  begin("retry_exhausted qp#0 nth=1");
  ASSERT_EQ(recv_on_b(1), 0);
  ASSERT_EQ(send_a_to_b(110), 0);
  auto a = poll(cq_a_, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_b_, 1, &wc), 0) << "the message never arrived";
  EXPECT_EQ(records_with("\"level\":\"cause\""), 1u);
}

}  // namespace
}  // namespace verbfault::testing

// Each fault kind injected on a REAL provider (the provider double, see
// double_fixture.h), where the interposer works at effect level: it rewrites
// what the application sees and drives the provider through its own verbs.
// Each test checks the chain the application observes through
// <infiniband/verbs.h>, and that the trace records the injection with
// "level":"effect".
#include "double_fixture.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

namespace verbfault::testing {
namespace {

constexpr uint32_t kPoison32 = 0xa5a5a5a5;
constexpr uint32_t kInjectedVendorErr = 0x1f0;

class EffectFaults : public DoublePair {};

// ---- work requests ----------------------------------------------------------------

TEST_F(EffectFaults, FlushMovesTheQpToErrorBeforeTheChosenWorkRequest) {
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
  // The provider flushes what is posted later.
  ASSERT_EQ(send_a_to_b(12), 0);
  auto later = poll(cq_a_, 1);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(session_->fired()[0], 1u);
  EXPECT_EQ(effect_records("flush"), 1u);
}

TEST_F(EffectFaults, CompletionErrorPoisonsTheCompletionAndFlushesWhatFollows) {
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
  EXPECT_EQ(a[0].vendor_err, kInjectedVendorErr);
  EXPECT_EQ(a[0].byte_len, kPoison32);
  EXPECT_EQ(a[0].src_qp, kPoison32);
  EXPECT_EQ(a[1].wr_id, 21u);
  EXPECT_EQ(a[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  // Later work is flushed by the provider itself (the QP really is in ERR).
  ASSERT_EQ(write_a_to_b(22), 0);
  auto later = poll(cq_a_, 1);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(effect_records("completion_error"), 1u);
}

TEST_F(EffectFaults, RnrRetryExhaustedFailsTheSendAndFlushesTheRest) {
  begin("rnr_retry_exhausted qp#0 opcode=send nth=1");
  ASSERT_EQ(recv_on_b(1), 0);
  ASSERT_EQ(send_a_to_b(100), 0);
  ASSERT_EQ(send_a_to_b(101), 0);
  auto a = poll(cq_a_, 2);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].wr_id, 100u);
  EXPECT_EQ(a[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(a[0].vendor_err, kInjectedVendorErr);
  EXPECT_EQ(a[1].wr_id, 101u);
  EXPECT_EQ(a[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);  // the responder stays in RTS
  EXPECT_EQ(effect_records("rnr_retry_exhausted"), 1u);
}

TEST_F(EffectFaults, RetryExhaustedFailsTheSend) {
  begin("retry_exhausted qp#0 nth=1");
  ASSERT_EQ(recv_on_b(1), 0);
  ASSERT_EQ(send_a_to_b(110), 0);
  auto a = poll(cq_a_, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].wr_id, 110u);
  EXPECT_EQ(a[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(effect_records("retry_exhausted"), 1u);
}

TEST_F(EffectFaults, VerbFailureOfPostSendPointsBadWrAtTheFailedRequest) {
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
  // The WR before bad_wr reached the provider, the ones from bad_wr on did not.
  auto a = poll(cq_a_, 3, 50);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].wr_id, 30u);
  EXPECT_EQ(a[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
  EXPECT_EQ(effect_records("verb_failure"), 1u);
}

TEST_F(EffectFaults, VerbFailureOfCreateQpSetsErrno) {
  begin("verb_failure(create_qp,ENOMEM) nth=3");  // a_ and b_ are the first two
  errno = 0;
  EXPECT_EQ(create_qp(cq_a_, cq_a_), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  ibv_qp* fourth = create_qp(cq_a_, cq_a_);
  ASSERT_NE(fourth, nullptr);
  EXPECT_EQ(ibv_destroy_qp(fourth), 0);
  EXPECT_EQ(effect_records("verb_failure"), 1u);
}

// ---- polls and completions ----------------------------------------------------------

TEST_F(EffectFaults, PartialPollReturnsFewerButLosesNothing) {
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
  EXPECT_GE(effect_records("partial_poll"), 1u);
}

TEST_F(EffectFaults, DelayedCompletionAppearsAfterThePolls) {
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
  EXPECT_EQ(effect_records("delayed_completion"), 1u);
}

// ---- completion events on the wrapped channel fd ----------------------------------------

TEST_F(EffectFaults, ProviderCompletionEventsStillArriveThroughTheWrappedFd) {
  begin("", 1, /*with_channel=*/true);
  EXPECT_FALSE(readable(channel_->fd));
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  EXPECT_FALSE(readable(channel_->fd)) << "arming alone raises nothing";
  ASSERT_EQ(write_a_to_b(1), 0);
  EXPECT_TRUE(readable(channel_->fd));
  // Blocking mode: the event is there, the call returns it at once.
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  ASSERT_EQ(ibv_get_cq_event(channel_, &cq, &context), 0);
  EXPECT_EQ(cq, cq_a_);
  EXPECT_EQ(context, &tag_a_);
  EXPECT_FALSE(readable(channel_->fd));
  ibv_ack_cq_events(cq, 1);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
}

TEST_F(EffectFaults, ProviderAsyncEventsStillArriveThroughTheWrappedFd) {
  begin("");
  // c stays in RTR: the first message it receives makes the provider raise
  // IBV_EVENT_COMM_EST.
  ibv_qp* c = create_qp(cq_b_, cq_b_);
  ibv_qp* d = create_qp(cq_a_, cq_a_);
  ASSERT_NE(c, nullptr);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(rc_connect(c, {.dest_qp_num = d->qp_num, .dlid = lid(), .stop_at = IBV_QPS_RTR}), 0);
  ASSERT_EQ(rc_connect(d, {.dest_qp_num = c->qp_num, .dlid = lid()}), 0);
  EXPECT_FALSE(readable(ctx_->async_fd));
  ASSERT_EQ(post_recv(c, 1, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_send(d, IBV_WR_SEND, 2, mr_a_, buf_a_, 8), 0);
  EXPECT_TRUE(readable(ctx_->async_fd));
  ibv_async_event event{};
  ASSERT_EQ(ibv_get_async_event(ctx_, &event), 0);  // blocking mode: there is one
  EXPECT_EQ(event.event_type, IBV_EVENT_COMM_EST);
  EXPECT_EQ(event.element.qp, c);
  EXPECT_FALSE(readable(ctx_->async_fd));
  ibv_ack_async_event(&event);
  AsyncEvent none = take_async(ctx_);
  EXPECT_FALSE(none.got);
  EXPECT_EQ(none.error, EAGAIN);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
  EXPECT_EQ(poll(cq_b_, 1).size(), 1u);
  // The provider's destroy_qp waits for the ack of every event it reported:
  // the application's ack reached it.
  EXPECT_EQ(ibv_destroy_qp(c), 0);
  EXPECT_EQ(ibv_destroy_qp(d), 0);
}

TEST_F(EffectFaults, SpuriousCqEventMakesTheChannelFdReadableWithoutACompletion) {
  begin("spurious_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  EXPECT_FALSE(readable(channel_->fd));
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  EXPECT_TRUE(readable(channel_->fd)) << "poll(2) reports the injected event";
  // Blocking mode (the application's default): the event is taken at once.
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  ASSERT_EQ(ibv_get_cq_event(channel_, &cq, &context), 0);
  EXPECT_EQ(cq, cq_a_);
  EXPECT_EQ(context, &tag_a_);
  EXPECT_FALSE(readable(channel_->fd));
  ibv_ack_cq_events(cq_a_, 1);
  // Nothing behind it: no completion, and a non-blocking get finds nothing.
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_a_, 1, &wc), 0);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(effect_records("spurious_cq_event"), 1u);
  // The injected event was acknowledged to the harness, not the provider:
  // destroy neither fails nor waits.
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
}

// As on the simulated device, whose spurious event disarms the CQ: the
// injected event answers the application's arm, so a completion after it
// raises no event until the application re-arms (F13: a loop that sleeps
// again without re-arming hangs on every provider).
TEST_F(EffectFaults, SpuriousCqEventSpendsTheApplicationsArm) {
  begin("spurious_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(try_get_event(), cq_a_);  // the injected one
  ibv_ack_cq_events(cq_a_, 1);
  // Not re-armed: the provider's event for this completion does not reach
  // the application.
  ASSERT_EQ(write_a_to_b(61), 0);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);  // the completion is there
  // Re-armed, the next completion raises an event as usual.
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(62), 0);
  EXPECT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
  // The swallowed event was acknowledged to the provider by the harness:
  // destroy neither fails nor waits.
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
}

// ibv_poll_cq(3): of an error completion only wr_id, status, qp_num and
// vendor_err are valid. The harness poisons the rest of a real provider's,
// as the simulated device leaves them (F04 reads the opcode of a flush).
TEST_F(EffectFaults, AProvidersErrorCompletionHasItsUndefinedFieldsPoisoned) {
  begin("", 1);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE), 0);
  ASSERT_EQ(send_a_to_b(64), 0);  // flushed
  const std::vector<ibv_wc> polled = poll(cq_a_, 1);
  ASSERT_EQ(polled.size(), 1u);
  const ibv_wc& wc = polled[0];
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc.wr_id, 64u);
  EXPECT_EQ(wc.qp_num, a_->qp_num);
  // The opcode's bytes, not the enum: 0xa5a5a5a5 is none of its values
  // (loading it as one is undefined behaviour).
  std::uint32_t opcode = 0;
  std::memcpy(&opcode, &wc.opcode, sizeof opcode);
  EXPECT_EQ(opcode, 0xa5a5a5a5u);
  EXPECT_EQ(wc.byte_len, 0xa5a5a5a5u);
  EXPECT_NE(wc.vendor_err, 0x1f0u) << "the provider's own vendor_err is kept";
}

TEST_F(EffectFaults, ARearmAfterTheSpuriousEventGetsTheNextEvent) {
  begin("spurious_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);  // what a correct loop does
  ASSERT_EQ(write_a_to_b(63), 0);
  EXPECT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
}

TEST_F(EffectFaults, SpuriousCqEventWakesAWaiterBlockedOnTheChannel) {
  begin("spurious_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  auto waiter = std::async(std::launch::async, [&] {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    const int result = ibv_get_cq_event(channel_, &cq, &context);
    return std::pair(result, cq);
  });
  // Let the waiter block (the outcome is the same if it has not yet).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);  // fires the rule
  if (waiter.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "the injected event did not wake the blocked ibv_get_cq_event";
    // Unblock it with a real event so that the test can end.
    ASSERT_EQ(ibv_req_notify_cq(cq_b_, 0), 0);
    ASSERT_EQ(recv_on_b(1), 0);
    ASSERT_EQ(send_a_to_b(2), 0);
  }
  auto [result, cq] = waiter.get();
  ASSERT_EQ(result, 0);
  ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(cq, cq_a_);
  EXPECT_EQ(effect_records("spurious_cq_event"), 1u);
}

TEST_F(EffectFaults, DroppedCqEventLeavesTheWaiterWithoutAWakeup) {
  begin("drop_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(60), 0);
  EXPECT_TRUE(readable(channel_->fd)) << "the provider's event is there";
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_FALSE(readable(channel_->fd));
  // The completion is there; the dropped event was acknowledged to the
  // provider by the harness, so destroy does not wait for it.
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
  EXPECT_EQ(session_->fired()[0], 1u);
  EXPECT_EQ(effect_records("drop_cq_event"), 1u);
}

TEST_F(EffectFaults, CoalescedCqEventAbsorbsTheNextOne) {
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
  EXPECT_EQ(effect_records("coalesce_cq_event"), 1u);
  // Both provider events were acknowledged (one by the application, the
  // absorbed one by the harness): destroy goes through.
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
}

// On a real provider a coalesced event waits a moment for the CQ's next
// completion and stands for both, as a device raises one event for two
// completions that come together: a program that takes one completion per
// event is left with the second and no event for it (as on the simulated
// device, where completions of a burst are already there).
TEST_F(EffectFaults, ACoalescedEventStandsForTheNextCompletionToo) {
  begin("coalesce_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(80), 0);
  // The next completion comes a little later, from another thread.
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return write_a_to_b(81);
  });
  ASSERT_EQ(try_get_event(), cq_a_);
  ASSERT_EQ(later.get(), 0);
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(records_with("\"merged\":1"), 1u);
  // One completion taken, re-armed: no event will report the other.
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(cq_a_, 1, &wc), 1);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u) << "the second completion is there";
  // The merged event was acknowledged to the provider by the harness.
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
}

TEST_F(EffectFaults, ACoalescedEventWithNoNextCompletionIsDeliveredAlone) {
  begin("coalesce_cq_event cq#0 nth=1", 1, /*with_channel=*/true);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(82), 0);
  ASSERT_EQ(try_get_event(), cq_a_);  // after the wait, alone
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(records_with("\"merged\":0"), 1u);
  EXPECT_EQ(poll(cq_a_, 2).size(), 1u);
  // The harness armed the provider's CQ while it waited: the completion
  // after it raises no event for an application that did not re-arm ...
  ASSERT_EQ(write_a_to_b(83), 0);
  errno = 0;
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
  // ... and does for one that did.
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(84), 0);
  EXPECT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(poll(cq_a_, 1).size(), 1u);
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
}

// ---- asynchronous events on the wrapped async fd ---------------------------------------

TEST_F(EffectFaults, CqOverflowPutsTheCqInErrorWithItsChain) {
  begin("cq_overflow cq#0 nth=1");
  ibv_wc wc;
  // The overflowing poll already fails, as on the simulated device.
  EXPECT_EQ(ibv_poll_cq(cq_a_, 1, &wc), -EIO) << "the poll at which the CQ overflows";
  EXPECT_EQ(ibv_poll_cq(cq_a_, 1, &wc), -EIO) << "every later poll";
  EXPECT_TRUE(readable(ctx_->async_fd));
  AsyncEvent first = take_async(ctx_);
  ASSERT_TRUE(first.got);
  EXPECT_EQ(first.event.event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(first.event.element.cq, cq_a_);
  ibv_ack_async_event(&first.event);
  AsyncEvent second = take_async(ctx_);
  ASSERT_TRUE(second.got);
  EXPECT_EQ(second.event.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(second.event.element.qp, a_);
  ibv_ack_async_event(&second.event);
  AsyncEvent none = take_async(ctx_);
  EXPECT_FALSE(none.got);
  EXPECT_EQ(none.error, EAGAIN);
  EXPECT_FALSE(readable(ctx_->async_fd));
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(effect_records("cq_overflow"), 1u);
  // Only destroy works now, and it does: the acks of the injected events
  // did not reach the provider.
  EXPECT_EQ(destroy_qp_a(), 0);
  EXPECT_EQ(destroy_cq_a(), 0);
}

TEST_F(EffectFaults, AsyncQpFatalIsReadableOnTheAsyncFdAndMovesTheQpToError) {
  // Calls on qp#0: three modify_qp to connect it, then the post.
  begin("async_event(qp_fatal) qp#0 nth=4");
  EXPECT_FALSE(readable(ctx_->async_fd));
  ASSERT_EQ(send_a_to_b(80), 0);
  EXPECT_TRUE(readable(ctx_->async_fd)) << "poll(2) reports the injected event";
  // Blocking mode (the default): the event is taken at once.
  ibv_async_event event{};
  ASSERT_EQ(ibv_get_async_event(ctx_, &event), 0);
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(event.element.qp, a_);
  EXPECT_FALSE(readable(ctx_->async_fd));
  ibv_ack_async_event(&event);
  AsyncEvent none = take_async(ctx_);
  EXPECT_FALSE(none.got);
  EXPECT_EQ(none.error, EAGAIN);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  auto a = poll(cq_a_, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(effect_records("async_event"), 1u);
  // The ack went to the harness: the provider's destroy_qp does not wait
  // for an event it never reported.
  EXPECT_EQ(destroy_qp_a(), 0);
}

TEST_F(EffectFaults, AsyncPortErrTakesThePortDown) {
  // Port events count calls on any object of the context: qp#1's fourth.
  begin("async_event(port_err) qp#1 nth=4");
  ASSERT_EQ(recv_on_b(1), 0);
  EXPECT_TRUE(readable(ctx_->async_fd));
  AsyncEvent event = take_async(ctx_);
  ASSERT_TRUE(event.got);
  EXPECT_EQ(event.event.event_type, IBV_EVENT_PORT_ERR);
  EXPECT_EQ(event.event.element.port_num, 1);
  ibv_ack_async_event(&event.event);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_DOWN) << "ibv_query_port after an injected PORT_ERR";
  ASSERT_EQ(send_a_to_b(90), 0);
  auto a = poll(cq_a_, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(effect_records("async_event"), 1u);
}

TEST_F(EffectFaults, PortDownEndsRcTrafficInRetryExhaustion) {
  // Calls on qp#1: three modify_qp to connect it, then the post.
  begin("port_down qp#1 nth=4");
  ASSERT_EQ(recv_on_b(1), 0);
  EXPECT_TRUE(readable(ctx_->async_fd));
  AsyncEvent event = take_async(ctx_);
  ASSERT_TRUE(event.got);
  EXPECT_EQ(event.event.event_type, IBV_EVENT_PORT_ERR);
  ibv_ack_async_event(&event.event);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_DOWN) << "ibv_query_port after an injected port_down";
  ASSERT_EQ(send_a_to_b(90), 0);
  auto a = poll(cq_a_, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(effect_records("port_down"), 1u);
}

TEST_F(EffectFaults, DeviceFatalMakesLaterVerbsFailWithEio) {
  begin("device_fatal qp#1 nth=4");
  (void)recv_on_b(1);  // the call at which the device dies
  EXPECT_TRUE(readable(ctx_->async_fd));
  AsyncEvent event = take_async(ctx_);
  ASSERT_TRUE(event.got);
  EXPECT_EQ(event.event.event_type, IBV_EVENT_DEVICE_FATAL);
  ibv_ack_async_event(&event.event);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
  // Every verb but destroy, poll and event handling fails with EIO.
  errno = 0;
  EXPECT_EQ(ibv_alloc_pd(ctx_), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(send_a_to_b(2), EIO) << "ibv_post_send after DEVICE_FATAL";
  EXPECT_EQ(recv_on_b(3), EIO) << "ibv_post_recv after DEVICE_FATAL";
  EXPECT_EQ(ibv_req_notify_cq(cq_a_, 0), EIO) << "ibv_req_notify_cq after DEVICE_FATAL";
  ibv_wc wc[4];
  EXPECT_GE(ibv_poll_cq(cq_a_, 4, wc), 0) << "polls still work";
  EXPECT_EQ(effect_records("device_fatal"), 1u);
}

// ---- extended CQs (ibv_create_cq_ex) on a real provider -----------------------------

TEST_F(EffectFaults, CompletionErrorReachesTheExtendedPollApiOfARealProvider) {
  session_ = std::make_unique<Session>(
      parse_rules("completion_error(rem_access_err) qp#0 nth=2", "test"), 1);
  open_device();
  ASSERT_FALSE(HasFatalFailure());
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 16;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;  // the interposer adds the QP number it needs
  ibv_cq_ex* cq_ex = ibv_create_cq_ex(ctx_, &attr);
  ASSERT_NE(cq_ex, nullptr);
  cq_a_ = ibv_cq_ex_to_cq(cq_ex);
  cq_b_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  a_ = create_qp(cq_a_, cq_a_);
  b_ = create_qp(cq_b_, cq_b_);
  ASSERT_TRUE(cq_b_ && a_ && b_);
  ASSERT_EQ(rc_connect(a_, {.dest_qp_num = b_->qp_num, .dlid = lid()}), 0);
  ASSERT_EQ(rc_connect(b_, {.dest_qp_num = a_->qp_num, .dlid = lid()}), 0);
  mr_a_ = ibv_reg_mr(pd_, buf_a_, sizeof buf_a_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr_a_, nullptr);
  for (uint64_t i = 0; i < 3; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_a_), 8, mr_a_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 20 + i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf_a_ + 64);
    wr.wr.rdma.rkey = mr_a_->rkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  }
  std::vector<std::pair<uint64_t, ibv_wc_status>> seen;
  ibv_poll_cq_attr poll_attr{};
  ASSERT_EQ(ibv_start_poll(cq_ex, &poll_attr), 0);
  do seen.emplace_back(cq_ex->wr_id, cq_ex->status);
  while (ibv_next_poll(cq_ex) == 0);
  ibv_end_poll(cq_ex);
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {
      {20, IBV_WC_SUCCESS}, {21, IBV_WC_REM_ACCESS_ERR}, {22, IBV_WC_WR_FLUSH_ERR}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR) << "driven to ERR through the provider's own verbs";
  EXPECT_EQ(effect_records("completion_error"), 1u);
}

// ---- the ibv_wr_* post API (ibv_create_qp_ex) on a real provider -------------------

TEST_F(EffectFaults, CompletionErrorReachesABuilderOfTheWrApiOnARealProvider) {
  session_ = std::make_unique<Session>(
      parse_rules("completion_error(rem_access_err) qp#0 nth=2", "test"), 1);
  open_device();
  ASSERT_FALSE(HasFatalFailure());
  cq_a_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  cq_b_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(cq_a_ && cq_b_);
  ibv_qp_init_attr_ex attr{};
  attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  attr.pd = pd_;
  attr.send_cq = attr.recv_cq = cq_a_;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 8;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
  a_ = ibv_create_qp_ex(ctx_, &attr);
  b_ = create_qp(cq_b_, cq_b_);
  ASSERT_TRUE(a_ && b_);
  ASSERT_EQ(rc_connect(a_, {.dest_qp_num = b_->qp_num, .dlid = lid()}), 0);
  ASSERT_EQ(rc_connect(b_, {.dest_qp_num = a_->qp_num, .dlid = lid()}), 0);
  mr_a_ = ibv_reg_mr(pd_, buf_a_, sizeof buf_a_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr_a_, nullptr);
  ibv_qp_ex* qpx = ibv_qp_to_qp_ex(a_);
  ASSERT_NE(qpx, nullptr);
  ibv_wr_start(qpx);
  for (uint64_t i = 0; i < 3; ++i) {
    qpx->wr_id = 30 + i;
    qpx->wr_flags = i == 1 ? 0 : IBV_SEND_SIGNALED;  // the doomed one is unsignaled
    ibv_wr_rdma_write(qpx, mr_a_->rkey, reinterpret_cast<uintptr_t>(buf_a_ + 64));
    ibv_wr_set_sge(qpx, mr_a_->lkey, reinterpret_cast<uintptr_t>(buf_a_), 8);
  }
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  std::vector<std::pair<uint64_t, ibv_wc_status>> seen;
  for (const ibv_wc& wc : poll(cq_a_, 3)) seen.emplace_back(wc.wr_id, wc.status);
  const std::vector<std::pair<uint64_t, ibv_wc_status>> expected = {
      {30, IBV_WC_SUCCESS}, {31, IBV_WC_REM_ACCESS_ERR}, {32, IBV_WC_WR_FLUSH_ERR}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(effect_records("completion_error"), 1u);
}

// libibverbs hands the channel's fd to the kernel: the provider's own fd,
// not the harness's wrapper (regression: rxe failed this with EBADF).
TEST_F(EffectFaults, ExtendedCqWithAChannelIsCreatedOnARealProvider) {
  session_ = std::make_unique<Session>(parse_rules("partial_poll cq#5", "test"), 1);
  open_device();
  ASSERT_FALSE(HasFatalFailure());
  channel_ = ibv_create_comp_channel(ctx_);
  ASSERT_NE(channel_, nullptr);
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 4;
  attr.channel = channel_;
  ibv_cq_ex* cq_ex = ibv_create_cq_ex(ctx_, &attr);
  ASSERT_NE(cq_ex, nullptr) << std::strerror(errno);
  cq_a_ = ibv_cq_ex_to_cq(cq_ex);
  EXPECT_EQ(cq_a_->channel, channel_);
}

}  // namespace
}  // namespace verbfault::testing

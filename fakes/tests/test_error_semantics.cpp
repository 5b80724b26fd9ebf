// Error semantics of the simulated device (issue 3): each cause with its
// whole chain of consequences on both sides.
#include "verbs_fixture.h"

#include <verbfault/fabric.h>

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

// The next async event. Non-blocking: an event that is missing fails the
// test (EAGAIN) instead of hanging it.
ibv_async_event next_async_event(ibv_context* ctx) {
  const int flags = fcntl(ctx->async_fd, F_GETFL);
  EXPECT_EQ(fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
  ibv_async_event event{};
  errno = 0;
  if (ibv_get_async_event(ctx, &event) != 0) ADD_FAILURE() << "no event: errno " << errno;
  return event;
}

bool async_fd_readable(ibv_context* ctx) {
  pollfd p{ctx->async_fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

TEST_F(SimDevice, RnrRetryExhaustionFailsTheRequesterAndFlushesTheRest) {
  ibv_cq* cq_a = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* cq_b = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* a = create_qp(IBV_QPT_RC, cq_a, cq_a);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq_b, cq_b);
  // rnr_retry 6 and the largest RNR timer (0 = 655.36 ms): on wall time
  // this would take 4.6 s; on the virtual clock it takes a few polls.
  ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh(), .rnr_retry = 6}),
            0);
  ASSERT_EQ(
      rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh(), .min_rnr_timer = 0}),
      0);
  char buf[64] = "x";
  ibv_mr* mr = reg(buf, sizeof buf);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(post_send(a, IBV_WR_SEND, 1, mr, buf, 8), 0);
  ASSERT_EQ(post_send(a, IBV_WR_SEND, 2, mr, buf, 8), 0);
  auto wcs = poll(cq_a, 2, 100);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(wcs[1].wr_id, 2u);
  EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(state_of(a), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b), IBV_QPS_RTS);  // the responder is unaffected
  // Posting again does not help: flushed at once.
  ASSERT_EQ(post_send(a, IBV_WR_SEND, 3, mr, buf, 8), 0);
  wcs = poll(cq_a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(SimDevice, ReceivePostedInTimeLetsAnRnrNakedSendComplete) {
  ibv_cq* cq_a = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* cq_b = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* a = create_qp(IBV_QPT_RC, cq_a, cq_a);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq_b, cq_b);
  ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh(), .rnr_retry = 3}),
            0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  char buf[64] = "late";
  char rbuf[64] = {};
  ibv_mr* mr = reg(buf, sizeof buf);
  ibv_mr* rmr = reg(rbuf, sizeof rbuf);
  ASSERT_EQ(post_send(a, IBV_WR_SEND, 1, mr, buf, 5), 0);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_a, 1, &wc), 0);  // one RNR retry spent
  ASSERT_EQ(post_recv(b, 9, rmr, rbuf, sizeof rbuf), 0);
  auto wcs = poll(cq_a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_STREQ(rbuf, "late");
}

TEST_F(SimDevice, SendToADestroyedPeerEndsInRetryExceeded) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* a = create_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq, cq);
  ASSERT_EQ(
      rc_connect(
          a,
          {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh(), .timeout = 31, .retry_cnt = 3}),
      0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(ibv_destroy_qp(b), 0);
  char buf[8] = {};
  ibv_mr* mr = reg(buf, sizeof buf);
  ASSERT_EQ(post_send(a, IBV_WR_SEND, 5, mr, buf, 8, 0 /* unsignaled */), 0);
  auto wcs = poll(cq, 1, 50);
  ASSERT_EQ(wcs.size(), 1u);  // IBA 10.7.3.1: errors complete even unsignaled
  EXPECT_EQ(wcs[0].wr_id, 5u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(state_of(a), IBV_QPS_ERR);
}

TEST_F(RcPair, PortDownRaisesPortErrAndFailsRcTrafficWithRetryExceeded) {
  // The port is the device's, shared by every test: up again whatever happens.
  struct PortUpAtExit {
    ibv_context* ctx;
    ~PortUpAtExit() { fabric::set_port_state(ctx, 1, IBV_PORT_ACTIVE); }
  } port_up{ctx_};
  ASSERT_EQ(fabric::set_port_state(ctx_, 1, IBV_PORT_DOWN), 0);
  EXPECT_TRUE(async_fd_readable(ctx_));
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_PORT_ERR);
  EXPECT_EQ(event.element.port_num, 1);
  ibv_ack_async_event(&event);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_DOWN);
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 1, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf_b_), mr_b_->rkey),
            0);
  auto wcs = poll(cq_a_, 1, 100);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
  ASSERT_EQ(fabric::set_port_state(ctx_, 1, IBV_PORT_ACTIVE), 0);
  event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_PORT_ACTIVE);
  ibv_ack_async_event(&event);
  EXPECT_FALSE(async_fd_readable(ctx_));
}

TEST_F(SimDevice, CqOverflowPutsTheCqInErrorAndEveryQpOnItInErr) {
  ibv_cq* small = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
  ibv_cq* other = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_EQ(small->cqe, 1);
  ibv_qp* a = create_qp(IBV_QPT_RC, small, small);
  ibv_qp* b = create_qp(IBV_QPT_RC, other, other);
  ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  char buf[8] = {};
  ibv_mr* mr = reg(buf, sizeof buf);
  // Unsignaled sends never count towards overflow.
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(post_send(a, IBV_WR_RDMA_WRITE, 100 + i, mr, buf, 8, 0,
                        reinterpret_cast<uintptr_t>(buf), mr->rkey),
              0);
  EXPECT_EQ(state_of(a), IBV_QPS_RTS);
  ASSERT_EQ(post_send(a, IBV_WR_RDMA_WRITE, 1, mr, buf, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf), mr->rkey),
            0);
  ASSERT_EQ(post_send(a, IBV_WR_RDMA_WRITE, 2, mr, buf, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf), mr->rkey),
            0);
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(event.element.cq, small);
  ibv_ack_async_event(&event);
  event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(event.element.qp, a);
  ibv_ack_async_event(&event);
  EXPECT_EQ(state_of(a), IBV_QPS_ERR);
  ibv_wc wc;
  EXPECT_LT(ibv_poll_cq(small, 1, &wc), 0);
  EXPECT_NE(ibv_req_notify_cq(small, 0), 0);
  ASSERT_EQ(ibv_destroy_qp(a), 0);
  EXPECT_EQ(ibv_destroy_cq(small), 0);  // only destroy works
}

TEST_F(SimDevice, QpOnAnSrqEnteringErrRaisesLastWqeReachedOnce) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_srq_init_attr sattr{};
  sattr.attr.max_wr = 8;
  sattr.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &sattr);
  ASSERT_NE(srq, nullptr);
  ibv_qp* qp = create_qp(IBV_QPT_RC, cq, cq, 16, srq);
  ASSERT_NE(qp, nullptr);
  ASSERT_EQ(rc_connect(qp, {.access = 0, .stop_at = IBV_QPS_INIT}), 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
  EXPECT_EQ(event.element.qp, qp);
  ibv_ack_async_event(&event);
  EXPECT_FALSE(async_fd_readable(ctx_));
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(RcPair, DeviceFatalRaisesTheEventAndFlushesEveryQp) {
  ASSERT_EQ(post_recv(b_, 11, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(fabric::device_fatal(ctx_), 0);
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_DEVICE_FATAL);
  ibv_ack_async_event(&event);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
  auto wcs = poll(cq_b_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 11u);
  EXPECT_EQ(wcs[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(RcPair, AffiliatedQpFatalMovesTheQpToErr) {
  ASSERT_EQ(fabric::raise_event(a_, IBV_EVENT_QP_FATAL), 0);
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(event.element.qp, a_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(a_->events_completed, 1u);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(fabric::raise_event(a_, IBV_EVENT_CQ_ERR), EINVAL);
}

TEST_F(RcPair, BadRkeyRaisesQpAccessErrOnTheResponder) {
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 1, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf_b_), mr_b_->rkey ^ 0x55),
            0);
  auto wcs = poll(cq_a_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR);
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_QP_ACCESS_ERR);
  EXPECT_EQ(event.element.qp, b_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
}

TEST_F(RcPair, NonSimulatedObjectsAreRefusedByTheFabricControls) {
  EXPECT_EQ(fabric::set_port_state(nullptr, 1, IBV_PORT_DOWN), ENODEV);
  EXPECT_EQ(fabric::set_port_state(ctx_, 2, IBV_PORT_DOWN), EINVAL);
  EXPECT_EQ(fabric::set_port_lid(ctx_, 1, 0), EINVAL);
}

}  // namespace
}  // namespace verbfault::testing

namespace verbfault::testing {
namespace {

TEST_F(RcPair, VerbsAfterDeviceFatalFailWithEio) {
  ASSERT_EQ(fabric::device_fatal(ctx_), 0);
  errno = 0;
  EXPECT_EQ(ibv_alloc_pd(ctx_), nullptr);
  EXPECT_EQ(errno, EIO);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx_, 4, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(post_send(a_, IBV_WR_SEND, 1, mr_a_, buf_a_, 8), EIO);
  EXPECT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 8), EIO);
  EXPECT_EQ(ibv_req_notify_cq(cq_a_, 0), EIO);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE), EIO);
  // Cleanup still works.
  EXPECT_EQ(ibv_destroy_qp(a_), 0);
  EXPECT_EQ(ibv_destroy_cq(cq_a_), 0);
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_DEVICE_FATAL);
  ibv_ack_async_event(&event);
}

}  // namespace
}  // namespace verbfault::testing

namespace verbfault::testing {
namespace {

TEST_F(SimDevice, DestroyCqWithTooManyAcksIsDiagnosedAndRefused) {
  ibv_comp_channel* channel = ibv_create_comp_channel(ctx_);
  ibv_cq* cq = ibv_create_cq(ctx_, 4, nullptr, channel, 0);
  ASSERT_NE(cq, nullptr);
  ibv_ack_cq_events(cq, 1);  // acks an event that was never reported
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("verbfault: ibv_destroy_cq(cq#"), std::string::npos) << err;
  EXPECT_NE(err.find("0 completion events reported, 1 acknowledged"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
}

}  // namespace
}  // namespace verbfault::testing

namespace verbfault::testing {
namespace {

// rnr_retry = 2: the first attempt and exactly two retries, each retry one
// jump of the virtual clock (one empty poll).
TEST_F(SimDevice, RnrRetryCountsRetriesAfterTheFirstAttempt) {
  ibv_cq* cq_a = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* cq_b = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* a = create_qp(IBV_QPT_RC, cq_a, cq_a);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq_b, cq_b);
  ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh(), .rnr_retry = 2}),
            0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  char buf[8] = {};
  ibv_mr* mr = reg(buf, sizeof buf);
  ASSERT_EQ(post_send(a, IBV_WR_SEND, 1, mr, buf, 8), 0);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq_a, 1, &wc), 0);  // first retry NAKed too
  ASSERT_EQ(ibv_poll_cq(cq_a, 1, &wc), 1);  // second retry NAKed: exhausted
  EXPECT_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(wc.vendor_err, 0x105u);
}

}  // namespace
}  // namespace verbfault::testing

namespace verbfault::testing {
namespace {

TEST_F(RcPair, MisalignedAtomicIsAnInvalidRequestOnBothSides) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 4;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(buf_b_) + 4;
  wr.wr.atomic.rkey = mr_b_->rkey;
  wr.wr.atomic.compare_add = 1;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto wcs = poll(cq_a_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_INV_REQ_ERR);
  ibv_async_event event = next_async_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_QP_REQ_ERR);
  EXPECT_EQ(event.element.qp, b_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
}

}  // namespace
}  // namespace verbfault::testing

namespace verbfault::testing {
namespace {

uintptr_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// ---- virtual clock ------------------------------------------------------------

// Each timer runs on the virtual clock from its own encoding: the RNR timer
// is the responder's min_rnr_timer (carried in its RNR NAK; 0 is the
// longest, 655.36 ms), the transport timer the requester's timeout
// (4.096 us * 2^timeout). Three requesters on one CQ, posted in the reverse
// order of their deadlines, fail in the order of their deadlines.
TEST_F(SimDevice, RetriesRunOnTheVirtualClockInTheOrderOfTheirTimers) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* peer_cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  // Requesters: min_rnr_timer 12 (0.64 ms) of their own, which must not count.
  // late: 4 RNR retries of 655.36 ms, exhausted at 2621.44 ms.
  ibv_qp* late = create_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* late_peer = create_qp(IBV_QPT_RC, peer_cq, peer_cq);
  ASSERT_EQ(
      rc_connect(late,
                 {.dest_qp_num = late_peer->qp_num, .dlid = lid(), .grh = grh(), .rnr_retry = 4}),
      0);
  ASSERT_EQ(
      rc_connect(late_peer,
                 {.dest_qp_num = late->qp_num, .dlid = lid(), .grh = grh(), .min_rnr_timer = 0}),
      0);
  // lost: no answer, 3 retries after timeouts of 4.096 us * 2^17 = 536.87 ms:
  // fails at 1610.61 ms (2147.48 ms if it also waits out the last timeout).
  ibv_qp* lost = create_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* gone = create_qp(IBV_QPT_RC, peer_cq, peer_cq);
  ASSERT_EQ(rc_connect(lost, {.dest_qp_num = gone->qp_num,
                              .dlid = lid(),
                              .grh = grh(),
                              .timeout = 17,
                              .retry_cnt = 3}),
            0);
  ASSERT_EQ(ibv_destroy_qp(gone), 0);
  // early: 2 RNR retries of 655.36 ms, exhausted at 1310.72 ms.
  ibv_qp* early = create_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* early_peer = create_qp(IBV_QPT_RC, peer_cq, peer_cq);
  ASSERT_EQ(
      rc_connect(early,
                 {.dest_qp_num = early_peer->qp_num, .dlid = lid(), .grh = grh(), .rnr_retry = 2}),
      0);
  ASSERT_EQ(
      rc_connect(early_peer,
                 {.dest_qp_num = early->qp_num, .dlid = lid(), .grh = grh(), .min_rnr_timer = 0}),
      0);

  char buf[8] = {};
  ibv_mr* mr = reg(buf, sizeof buf);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(post_send(late, IBV_WR_SEND, 1, mr, buf, 8), 0);
  ASSERT_EQ(post_send(lost, IBV_WR_SEND, 2, mr, buf, 8), 0);
  ASSERT_EQ(post_send(early, IBV_WR_SEND, 3, mr, buf, 8), 0);
  auto wcs = poll(cq, 3, 100);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_EQ(wcs.size(), 3u);
  EXPECT_EQ(wcs[0].wr_id, 3u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(wcs[1].wr_id, 2u);
  EXPECT_EQ(wcs[1].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(wcs[2].wr_id, 1u);
  EXPECT_EQ(wcs[2].status, IBV_WC_RNR_RETRY_EXC_ERR);
}

// rnr_retry 7 retries forever (IBA 9.7.5.2.8): a receive posted after many
// more than 7 RNR NAKs still lets the send complete.
TEST_F(SimDevice, RnrRetrySevenRetriesForever) {
  ibv_cq* cq_a = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* cq_b = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* a = create_qp(IBV_QPT_RC, cq_a, cq_a);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq_b, cq_b);
  ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh(), .rnr_retry = 7}),
            0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  char buf[8] = "forever";
  char rbuf[8] = {};
  ibv_mr* mr = reg(buf, sizeof buf);
  ibv_mr* rmr = reg(rbuf, sizeof rbuf);
  ASSERT_EQ(post_send(a, IBV_WR_SEND, 1, mr, buf, 8), 0);
  ibv_wc wc;
  for (int retry = 0; retry < 50; ++retry) ASSERT_EQ(ibv_poll_cq(cq_a, 1, &wc), 0) << retry;
  EXPECT_EQ(state_of(a), IBV_QPS_RTS);
  ASSERT_EQ(post_recv(b, 2, rmr, rbuf, sizeof rbuf), 0);
  auto wcs = poll(cq_a, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_STREQ(rbuf, "forever");
}

// ---- transport retries ----------------------------------------------------------

// retry_cnt 2: the first attempt and two retries, each after one timeout
// (one empty poll). A peer that is ready again after the second retry is
// too late.
TEST_F(SimDevice, RetryCntCountsTransportRetriesAfterTheFirstAttempt) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* a = create_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq, cq);
  ASSERT_EQ(
      rc_connect(
          a,
          {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh(), .timeout = 10, .retry_cnt = 2}),
      0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RESET;  // a QP in RESET receives nothing
  ASSERT_EQ(ibv_modify_qp(b, &attr, IBV_QP_STATE), 0);
  char src[8] = "toolate";
  char dst[8] = {};
  ibv_mr* mr = reg(src, sizeof src);
  ibv_mr* dst_mr = reg(dst, sizeof dst);
  ASSERT_EQ(
      post_send(a, IBV_WR_RDMA_WRITE, 1, mr, src, 8, IBV_SEND_SIGNALED, addr_of(dst), dst_mr->rkey),
      0);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);  // the first retry is lost too
  // The second retry is lost: the error comes now or once its timeout ran out.
  const int n = ibv_poll_cq(cq, 1, &wc);
  ASSERT_GE(n, 0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
  std::vector<ibv_wc> wcs;
  if (n == 1)
    wcs.push_back(wc);
  else
    wcs = poll(cq, 1, 10);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(wcs[0].vendor_err, 0x106u);
  EXPECT_EQ(dst[0], 0) << "nothing arrived";
  EXPECT_EQ(state_of(a), IBV_QPS_ERR);
}

// A peer that exists but does not receive (RESET, INIT, ERR) answers
// nothing: the requester's retries run out.
TEST_F(SimDevice, SendToAPeerInResetInitOrErrEndsInRetryExceeded) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  char src[8] = "payload";
  char dst[8] = {};
  ibv_mr* mr = reg(src, sizeof src);
  ibv_mr* dst_mr = reg(dst, sizeof dst);
  for (ibv_qp_state peer_state : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_ERR}) {
    SCOPED_TRACE(peer_state);
    ibv_qp* a = create_qp(IBV_QPT_RC, cq, cq);
    ibv_qp* b = create_qp(IBV_QPT_RC, cq, cq);
    ASSERT_EQ(
        rc_connect(
            a,
            {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh(), .timeout = 8, .retry_cnt = 1}),
        0);
    ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh()}), 0);
    // Connected, then moved: the peer still names a as its destination.
    ibv_qp_attr attr{};
    attr.qp_state = peer_state == IBV_QPS_ERR ? IBV_QPS_ERR : IBV_QPS_RESET;
    ASSERT_EQ(ibv_modify_qp(b, &attr, IBV_QP_STATE), 0);
    if (peer_state == IBV_QPS_INIT) {
      ASSERT_EQ(rc_connect(b, {.access = IBV_ACCESS_REMOTE_WRITE, .stop_at = IBV_QPS_INIT}), 0);
    }
    EXPECT_EQ(state_of(b), peer_state);
    poll(cq, 16, 1);  // b's flushes, if any
    ASSERT_EQ(post_send(a, IBV_WR_RDMA_WRITE, 7, mr, src, 8, IBV_SEND_SIGNALED, addr_of(dst),
                        dst_mr->rkey),
              0);
    auto wcs = poll(cq, 1, 10);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].wr_id, 7u);
    EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
    EXPECT_EQ(state_of(a), IBV_QPS_ERR);
    EXPECT_EQ(dst[0], 0) << "nothing arrived";
    ASSERT_EQ(ibv_destroy_qp(a), 0);
    ASSERT_EQ(ibv_destroy_qp(b), 0);
  }
}

// ---- local and remote errors ------------------------------------------------------

// IBA 9.7.5.2.3: a receive buffer exactly the size of the message is
// enough; one byte less is a local length error.
TEST_F(RcPair, ReceiveBufferOfExactlyTheMessageSizeIsEnoughOneByteLessIsNot) {
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 16), 0);
  ASSERT_EQ(post_recv(b_, 2, mr_b_, buf_b_ + 64, 15), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 10, mr_a_, buf_a_, 16), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 11, mr_a_, buf_a_, 16), 0);
  auto recv = poll(cq_b_, 2);
  ASSERT_EQ(recv.size(), 2u);
  EXPECT_EQ(recv[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv[0].byte_len, 16u);
  EXPECT_EQ(recv[1].wr_id, 2u);
  EXPECT_EQ(recv[1].status, IBV_WC_LOC_LEN_ERR);
  auto send = poll(cq_a_, 2);
  ASSERT_EQ(send.size(), 2u);
  EXPECT_EQ(send[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(send[1].status, IBV_WC_REM_INV_REQ_ERR);
}

// The responder QP's own qp_access_flags gate RDMA: an MR that allows it is
// not enough (ibv_modify_qp(3) IBV_QP_ACCESS_FLAGS). An operation the QP
// does not enable is an Invalid Request (IBA 9.7.5.2; rxe_resp.c
// check_op_valid), not an R_Key violation: REM_INV_REQ_ERR at the
// requester, QP_REQ_ERR and ERR at the responder.
TEST_F(SimDevice, RdmaWithoutTheResponderQpsAccessFlagIsAnInvalidRequest) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  alignas(8) uint8_t local[8] = {};
  alignas(8) uint8_t remote[8] = {};
  ibv_mr* lmr = reg(local, sizeof local);
  ibv_mr* rmr = reg(remote, sizeof remote);  // every access flag
  const int all = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  struct Case {
    ibv_wr_opcode opcode;
    int missing;
  };
  for (Case c : {Case{IBV_WR_RDMA_WRITE, IBV_ACCESS_REMOTE_WRITE},
                 Case{IBV_WR_RDMA_READ, IBV_ACCESS_REMOTE_READ},
                 Case{IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_ACCESS_REMOTE_ATOMIC}}) {
    SCOPED_TRACE(c.opcode);
    ibv_qp* a = create_qp(IBV_QPT_RC, cq, cq);
    ibv_qp* b = create_qp(IBV_QPT_RC, cq, cq);
    ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh()}), 0);
    ASSERT_EQ(
        rc_connect(
            b, {.dest_qp_num = a->qp_num, .dlid = lid(), .grh = grh(), .access = all & ~c.missing}),
        0);
    ibv_sge sge{addr_of(local), 8, lmr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 5;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = c.opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (c.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      wr.wr.atomic.remote_addr = addr_of(remote);
      wr.wr.atomic.rkey = rmr->rkey;
      wr.wr.atomic.compare_add = 1;
    } else {
      wr.wr.rdma.remote_addr = addr_of(remote);
      wr.wr.rdma.rkey = rmr->rkey;
    }
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
    auto wcs = poll(cq, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_REM_INV_REQ_ERR);
    ibv_async_event event = next_async_event(ctx_);
    ASSERT_EQ(event.event_type, IBV_EVENT_QP_REQ_ERR);
    EXPECT_EQ(event.element.qp, b);
    ibv_ack_async_event(&event);
    EXPECT_EQ(state_of(b), IBV_QPS_ERR);
    EXPECT_EQ(remote[0], 0);
    ASSERT_EQ(ibv_destroy_qp(a), 0);
    ASSERT_EQ(ibv_destroy_qp(b), 0);
  }
}

// A bad lkey never leaves the requester: IBV_WC_LOC_PROT_ERR there, nothing
// at the responder (its receive stays posted). Same for a READ into memory
// without IBV_ACCESS_LOCAL_WRITE.
TEST_F(RcPair, BadLkeyOrUnwritableReadTargetIsALocalProtectionError) {
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 64), 0);
  ibv_sge sge{addr_of(buf_a_), 8, mr_a_->lkey ^ 0x55};
  ibv_send_wr wr{};
  wr.wr_id = 20;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto wcs = poll(cq_a_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 20u);
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(wcs[0].vendor_err, 0x101u);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);
  EXPECT_EQ(poll(cq_b_, 1, 3).size(), 0u) << "the receive was not consumed";

  // RDMA READ from b_ into a read-only buffer of b_'s side.
  char readonly[8] = {};
  ibv_mr* ro = reg(readonly, sizeof readonly, IBV_ACCESS_REMOTE_READ);
  ibv_qp* c = create_qp(IBV_QPT_RC, cq_b_, cq_b_);
  ibv_qp* d = create_qp(IBV_QPT_RC, cq_b_, cq_b_);
  ASSERT_EQ(rc_connect(c, {.dest_qp_num = d->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(rc_connect(d, {.dest_qp_num = c->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(post_send(c, IBV_WR_RDMA_READ, 21, ro, readonly, 8, IBV_SEND_SIGNALED, addr_of(buf_b_),
                      mr_b_->rkey),
            0);
  wcs = poll(cq_b_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 21u);
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(state_of(c), IBV_QPS_ERR);
  EXPECT_EQ(state_of(d), IBV_QPS_RTS);
}

// A receive WR whose SGE the responder cannot write: IBV_WC_LOC_PROT_ERR on
// the responder's receive, IBV_WC_REM_OP_ERR at the requester, both in ERR.
TEST_F(RcPair, ReceiveIntoABadLkeyFailsBothSides) {
  ibv_sge rsge{addr_of(buf_b_), 64, mr_b_->lkey ^ 0x55};
  ibv_recv_wr rwr{};
  rwr.wr_id = 30;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 31, mr_a_, buf_a_, 8), 0);
  auto recv = poll(cq_b_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wr_id, 30u);
  EXPECT_EQ(recv[0].status, IBV_WC_LOC_PROT_ERR);
  auto send = poll(cq_a_, 1);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].wr_id, 31u);
  EXPECT_EQ(send[0].status, IBV_WC_REM_OP_ERR);
  EXPECT_EQ(send[0].vendor_err, 0x107u);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
}

// ---- error state and flush ---------------------------------------------------------

// Every outstanding send WR, the one being retried included, is flushed in
// the order it was posted.
TEST_F(RcPair, ModifyToErrFlushesOutstandingSendsInPostingOrder) {
  for (uint64_t id = 1; id <= 4; ++id)  // b_ has no receive: RNR-retried forever
    ASSERT_EQ(post_send(a_, IBV_WR_SEND, id, mr_a_, buf_a_, 8), 0);
  EXPECT_EQ(poll(cq_a_, 1, 3).size(), 0u);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE), 0);
  auto wcs = poll(cq_a_, 4);
  ASSERT_EQ(wcs.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(wcs[i].wr_id, i + 1);
    EXPECT_EQ(wcs[i].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(wcs[i].qp_num, a_->qp_num);
  }
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);
}

}  // namespace
}  // namespace verbfault::testing

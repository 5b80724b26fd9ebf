// Error semantics of the simulated device (issue 3): each cause with its
// whole chain of consequences on both sides.
#include "verbs_fixture.h"

#include <verbfault/fabric.h>

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace verbfault::testing {
namespace {

ibv_async_event next_async_event(ibv_context* ctx) {
  ibv_async_event event{};
  EXPECT_EQ(ibv_get_async_event(ctx, &event), 0);
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
  ASSERT_EQ(connect(a, b->qp_num, lid(), /*rnr_retry=*/6), 0);
  ASSERT_EQ(connect(b, a->qp_num, lid(), 7, /*min_rnr_timer=*/0), 0);
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
  ASSERT_EQ(connect(a, b->qp_num, lid(), /*rnr_retry=*/3), 0);
  ASSERT_EQ(connect(b, a->qp_num, lid()), 0);
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
  ASSERT_EQ(connect(a, b->qp_num, lid(), 7, 12, /*timeout=*/31, /*retry_cnt=*/3), 0);
  ASSERT_EQ(connect(b, a->qp_num, lid()), 0);
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
  ASSERT_EQ(fabric::set_port_state(ctx_, 1, IBV_PORT_DOWN), 0);
  EXPECT_TRUE(async_fd_readable(ctx_));
  ibv_async_event event = next_async_event(ctx_);
  EXPECT_EQ(event.event_type, IBV_EVENT_PORT_ERR);
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
  EXPECT_EQ(event.event_type, IBV_EVENT_PORT_ACTIVE);
  ibv_ack_async_event(&event);
  EXPECT_FALSE(async_fd_readable(ctx_));
}

TEST_F(SimDevice, CqOverflowPutsTheCqInErrorAndEveryQpOnItInErr) {
  ibv_cq* small = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
  ibv_cq* other = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_EQ(small->cqe, 1);
  ibv_qp* a = create_qp(IBV_QPT_RC, small, small);
  ibv_qp* b = create_qp(IBV_QPT_RC, other, other);
  ASSERT_EQ(connect(a, b->qp_num, lid()), 0);
  ASSERT_EQ(connect(b, a->qp_num, lid()), 0);
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
  EXPECT_EQ(event.event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(event.element.cq, small);
  ibv_ack_async_event(&event);
  event = next_async_event(ctx_);
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_FATAL);
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
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  ASSERT_EQ(ibv_modify_qp(qp, &attr,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
            0);
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
  ibv_async_event event = next_async_event(ctx_);
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
  EXPECT_EQ(event.element.qp, qp);
  ibv_ack_async_event(&event);
  EXPECT_FALSE(async_fd_readable(ctx_));
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(RcPair, DeviceFatalRaisesTheEventAndFlushesEveryQp) {
  ASSERT_EQ(post_recv(b_, 11, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(fabric::device_fatal(ctx_), 0);
  ibv_async_event event = next_async_event(ctx_);
  EXPECT_EQ(event.event_type, IBV_EVENT_DEVICE_FATAL);
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
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_FATAL);
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
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_ACCESS_ERR);
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
  ibv_async_event event{};
  ASSERT_EQ(ibv_get_async_event(ctx_, &event), 0);
  EXPECT_EQ(event.event_type, IBV_EVENT_DEVICE_FATAL);
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
  ASSERT_EQ(connect(a, b->qp_num, lid(), /*rnr_retry=*/2), 0);
  ASSERT_EQ(connect(b, a->qp_num, lid()), 0);
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
  ibv_async_event event{};
  ASSERT_EQ(ibv_get_async_event(ctx_, &event), 0);
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_REQ_ERR);
  EXPECT_EQ(event.element.qp, b_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(state_of(a_), IBV_QPS_ERR);
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
}

}  // namespace
}  // namespace verbfault::testing

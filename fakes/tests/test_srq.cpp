// Shared receive queues: ibv_create_srq(3), ibv_modify_srq(3),
// ibv_query_srq(3), ibv_post_srq_recv(3), ibv_destroy_srq(3) and the
// IBV_EVENT_SRQ_LIMIT_REACHED and IBV_EVENT_SRQ_ERR async events
// (ibv_get_async_event(3)).
#include "verbs_fixture.h"

#include <verbfault/fabric.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>

namespace verbfault::testing {
namespace {

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// Two senders, each connected to its own receiver; both receivers take
// their receive WRs from one SRQ.
class SrqPair : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    ibv_srq_init_attr init{};
    init.attr.max_wr = 16;
    init.attr.max_sge = 2;
    srq_ = ibv_create_srq(pd_, &init);
    ASSERT_NE(srq_, nullptr);
    send_cq_ = ibv_create_cq(ctx_, 32, nullptr, nullptr, 0);
    recv_cq_ = ibv_create_cq(ctx_, 32, nullptr, nullptr, 0);
    ASSERT_NE(send_cq_, nullptr);
    ASSERT_NE(recv_cq_, nullptr);
    for (int i = 0; i < 2; ++i) {
      senders_[i] = create_qp(IBV_QPT_RC, send_cq_, send_cq_);
      receivers_[i] = create_qp(IBV_QPT_RC, recv_cq_, recv_cq_, 16, srq_);
      ASSERT_NE(senders_[i], nullptr);
      ASSERT_NE(receivers_[i], nullptr);
      ASSERT_EQ(rc_connect(senders_[i],
                           {.dest_qp_num = receivers_[i]->qp_num, .dlid = lid(), .grh = grh()}),
                0);
      ASSERT_EQ(rc_connect(receivers_[i],
                           {.dest_qp_num = senders_[i]->qp_num, .dlid = lid(), .grh = grh()}),
                0);
    }
    mr_ = reg(buf_, sizeof buf_);
  }

  int post_srq(uint64_t wr_id, size_t offset, uint32_t len = 64) {
    ibv_sge sge{addr_of(buf_ + offset), len, mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_srq_recv(srq_, &wr, &bad);
  }
  int send_from(int i, const char* text) {
    std::memcpy(buf_ + 3000 + i * 64, text, std::strlen(text));
    return post_send(senders_[i], IBV_WR_SEND, 100 + i, mr_, buf_ + 3000 + i * 64,
                     static_cast<uint32_t>(std::strlen(text)));
  }
  // The next async event; a failure of the test when none is pending (the
  // event returned then is zeroed: no out-of-range sentinel is loaded as an
  // ibv_event_type, which UBSan would report).
  ibv_async_event next_event() {
    std::optional<ibv_async_event> event = pending_event();
    if (!event) {
      ADD_FAILURE() << "no async event pending";
      return ibv_async_event{};
    }
    return *event;
  }
  // No async event is pending: ibv_get_async_event fails with EAGAIN.
  void expect_no_event() {
    std::optional<ibv_async_event> event = pending_event();
    if (!event) return;
    ADD_FAILURE() << "unexpected event " << ibv_event_type_str(event->event_type);
    ibv_ack_async_event(&*event);
  }
  std::optional<ibv_async_event> pending_event() {
    const int flags = fcntl(ctx_->async_fd, F_GETFL);
    EXPECT_EQ(fcntl(ctx_->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
    ibv_async_event event{};
    errno = 0;
    if (ibv_get_async_event(ctx_, &event) != 0) {
      EXPECT_EQ(errno, EAGAIN);
      return std::nullopt;
    }
    return event;
  }

  ibv_srq* srq_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  ibv_qp* senders_[2] = {};
  ibv_qp* receivers_[2] = {};
  alignas(64) uint8_t buf_[4096] = {};
  ibv_mr* mr_ = nullptr;
};

TEST_F(SrqPair, ReceivesOfBothQpsComeFromTheSrqInOrder) {
  ASSERT_EQ(post_srq(1, 0), 0);
  ASSERT_EQ(post_srq(2, 64), 0);
  ASSERT_EQ(post_srq(3, 128), 0);
  ASSERT_EQ(send_from(1, "to-second"), 0);
  ASSERT_EQ(send_from(0, "to-first"), 0);
  auto recv = poll(recv_cq_, 2);
  ASSERT_EQ(recv.size(), 2u);
  // The SRQ hands out its WRs oldest first, whichever QP the message is for.
  EXPECT_EQ(recv[0].wr_id, 1u);
  EXPECT_EQ(recv[0].qp_num, receivers_[1]->qp_num);
  EXPECT_EQ(recv[0].src_qp, senders_[1]->qp_num);
  EXPECT_EQ(recv[0].byte_len, 9u);
  EXPECT_EQ(std::memcmp(buf_, "to-second", 9), 0);
  EXPECT_EQ(recv[1].wr_id, 2u);
  EXPECT_EQ(recv[1].qp_num, receivers_[0]->qp_num);
  EXPECT_EQ(recv[1].src_qp, senders_[0]->qp_num);
  EXPECT_EQ(recv[1].byte_len, 8u);
  EXPECT_EQ(std::memcmp(buf_ + 64, "to-first", 8), 0);
  for (const ibv_wc& wc : recv) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  }
  EXPECT_EQ(poll(send_cq_, 2).size(), 2u);
  // WR 3 is still in the SRQ for whichever QP receives next.
  ASSERT_EQ(send_from(0, "third"), 0);
  recv = poll(recv_cq_, 1);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wr_id, 3u);
  EXPECT_EQ(recv[0].qp_num, receivers_[0]->qp_num);
}

TEST_F(SrqPair, PostRecvOnAQpWithAnSrqIsEinval) {
  ibv_sge sge{addr_of(buf_), 64, mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_recv(receivers_[0], &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST_F(SrqPair, QuerySrqReportsItsAttributes) {
  ibv_srq_attr attr{};
  ASSERT_EQ(ibv_query_srq(srq_, &attr), 0);
  EXPECT_GE(attr.max_wr, 16u);
  EXPECT_GE(attr.max_sge, 2u);
  EXPECT_EQ(attr.srq_limit, 0u);
  ibv_srq_attr limit{};
  limit.srq_limit = 5;
  ASSERT_EQ(ibv_modify_srq(srq_, &limit, IBV_SRQ_LIMIT), 0);
  ASSERT_EQ(ibv_query_srq(srq_, &attr), 0);
  EXPECT_EQ(attr.srq_limit, 5u);
  EXPECT_GE(attr.max_wr, 16u);
}

TEST_F(SrqPair, LimitAboveMaxWrIsEinval) {
  ibv_srq_attr attr{};
  attr.srq_limit = 1000;
  EXPECT_EQ(ibv_modify_srq(srq_, &attr, IBV_SRQ_LIMIT), EINVAL);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq_, &q), 0);
  EXPECT_EQ(q.srq_limit, 0u);
}

TEST_F(SrqPair, DroppingBelowTheLimitRaisesSrqLimitReachedOnce) {
  for (uint64_t id = 0; id < 4; ++id) ASSERT_EQ(post_srq(id, id * 64), 0);
  ibv_srq_attr attr{};
  attr.srq_limit = 3;
  ASSERT_EQ(ibv_modify_srq(srq_, &attr, IBV_SRQ_LIMIT), 0);
  // 4 -> 3 WRs: not below the limit yet.
  ASSERT_EQ(send_from(0, "one"), 0);
  ASSERT_EQ(poll(recv_cq_, 1).size(), 1u);
  expect_no_event();
  // 3 -> 2 WRs: below the limit.
  ASSERT_EQ(send_from(1, "two"), 0);
  ASSERT_EQ(poll(recv_cq_, 1).size(), 1u);
  ibv_async_event event = next_event();
  ASSERT_EQ(event.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(event.element.srq, srq_);
  ibv_ack_async_event(&event);
  // The event disarmed the limit: no second event.
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq_, &q), 0);
  EXPECT_EQ(q.srq_limit, 0u);
  ASSERT_EQ(send_from(0, "three"), 0);
  ASSERT_EQ(poll(recv_cq_, 1).size(), 1u);
  expect_no_event();
}

// IBA 11.6.3.1 "SRQ catastrophic error": the event names the SRQ, and every
// QP on it goes to ERR, each reporting its last WQE.
TEST_F(SrqPair, SrqErrIsReportedOnTheSrqAndEveryQpOnItGoesToErr) {
  ASSERT_EQ(post_srq(1, 0), 0);
  ASSERT_EQ(fabric::raise_event(srq_, IBV_EVENT_SRQ_ERR), 0);
  ibv_async_event event = next_event();
  ASSERT_EQ(event.event_type, IBV_EVENT_SRQ_ERR);
  EXPECT_EQ(event.element.srq, srq_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(srq_->events_completed, 1u);
  for (ibv_qp* receiver : receivers_) {  // in QPN order
    EXPECT_EQ(state_of(receiver), IBV_QPS_ERR);
    event = next_event();
    ASSERT_EQ(event.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
    EXPECT_EQ(event.element.qp, receiver);
    ibv_ack_async_event(&event);
  }
  expect_no_event();
  // The senders are not on the SRQ.
  EXPECT_EQ(state_of(senders_[0]), IBV_QPS_RTS);
  EXPECT_EQ(state_of(senders_[1]), IBV_QPS_RTS);
  EXPECT_EQ(fabric::raise_event(srq_, IBV_EVENT_QP_FATAL), EINVAL);
}

TEST_F(SrqPair, DestroyWhileAttachedIsEbusy) {
  EXPECT_EQ(ibv_destroy_srq(srq_), EBUSY);
  ASSERT_EQ(ibv_destroy_qp(receivers_[0]), 0);
  EXPECT_EQ(ibv_destroy_srq(srq_), EBUSY);
  ASSERT_EQ(ibv_destroy_qp(receivers_[1]), 0);
  EXPECT_EQ(ibv_destroy_srq(srq_), 0);
}

TEST_F(SrqPair, SrqFullIsEnomemUntilCompletionsArePolled) {
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq_, &q), 0);
  for (uint32_t i = 0; i < q.max_wr; ++i) ASSERT_EQ(post_srq(i, 0, 8), 0) << i;
  EXPECT_EQ(post_srq(99, 0, 8), ENOMEM);
  ASSERT_EQ(send_from(0, "x"), 0);
  EXPECT_EQ(post_srq(99, 0, 8), ENOMEM);  // consumed, but its completion not polled
  ASSERT_EQ(poll(recv_cq_, 1).size(), 1u);
  EXPECT_EQ(post_srq(99, 0, 8), 0);
}

}  // namespace
}  // namespace verbfault::testing

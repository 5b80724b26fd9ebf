// Asynchronous events of the simulated device (ibv_get_async_event(3),
// ibv_ack_async_event(3)): each event with its element and consequences,
// the readiness of ibv_context::async_fd, and ibv_destroy_qp / ibv_destroy_srq
// while events are not acknowledged. Through <infiniband/verbs.h> and the
// fabric controls of <verbfault/fabric.h> only.
#include "verbs_fixture.h"

#include <verbfault/fabric.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace verbfault::testing {
namespace {

void set_nonblocking(int fd, bool on) {
  const int flags = fcntl(fd, F_GETFL);
  ASSERT_GE(flags, 0);
  ASSERT_EQ(fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK), 0);
}

// poll(2) on the async fd: true when it reports POLLIN within timeout_ms.
bool readable(ibv_context* ctx, int timeout_ms = 0) {
  pollfd p{ctx->async_fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

// The next event of a context whose async fd is non-blocking; a failure
// of the test when there is none (the event is then zeroed, so that no
// out-of-range ibv_event_type is loaded).
ibv_async_event next_event(ibv_context* ctx) {
  ibv_async_event event{};
  errno = 0;
  if (ibv_get_async_event(ctx, &event) != 0) ADD_FAILURE() << "no event: errno " << errno;
  return event;
}

// No event is queued: a non-blocking ibv_get_async_event fails with EAGAIN.
void expect_no_event(ibv_context* ctx) {
  ibv_async_event event{};
  errno = 0;
  const int rc = ibv_get_async_event(ctx, &event);
  EXPECT_EQ(rc, -1) << "unexpected event " << ibv_event_type_str(event.event_type);
  if (rc == 0) {
    ibv_ack_async_event(&event);
    return;
  }
  EXPECT_EQ(errno, EAGAIN);
}

// Whether `text` holds exactly one line and contains `part`.
::testing::AssertionResult one_line_with(const std::string& text, const std::string& part) {
  if (std::count(text.begin(), text.end(), '\n') != 1)
    return ::testing::AssertionFailure() << "not one line: " << text;
  if (text.find(part) == std::string::npos)
    return ::testing::AssertionFailure() << "'" << part << "' not in: " << text;
  return ::testing::AssertionSuccess();
}

// A connected RC pair on vfsim0 whose async fd is non-blocking, so that "no
// event" is EAGAIN instead of a hang.
class AsyncEvents : public RcPair {
 protected:
  void SetUp() override {
    RcPair::SetUp();
    if (HasFatalFailure()) return;
    set_nonblocking(ctx_->async_fd, true);
  }

  // A signaled 8-byte RDMA WRITE from a_ into b_'s buffer, polled.
  ibv_wc_status write_a_to_b(uint64_t wr_id) {
    EXPECT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, wr_id, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED,
                        reinterpret_cast<uintptr_t>(buf_b_), mr_b_->rkey),
              0);
    auto wcs = poll(cq_a_, 1, 100);
    EXPECT_EQ(wcs.size(), 1u);
    return wcs.empty() ? IBV_WC_GENERAL_ERR : wcs[0].status;
  }
};

// Tests of one link layer only (OnLinkLayer).
class InfiniBandAsyncEvents : public OnLinkLayer<AsyncEvents, /*kEthernet=*/false> {};
class RoceAsyncEvents : public OnLinkLayer<AsyncEvents, /*kEthernet=*/true> {};

// ---- the async fd -----------------------------------------------------------

TEST_F(AsyncEvents, NonblockingFdIsEagainWhenEmptyAndReadableExactlyWhileEventsAreQueued) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event interest{};
  interest.events = EPOLLIN;  // level-triggered
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, ctx_->async_fd, &interest), 0);
  auto epoll_ready = [ep] {
    epoll_event out{};
    return epoll_wait(ep, &out, 1, 0) == 1 && (out.events & EPOLLIN) != 0;
  };

  EXPECT_FALSE(readable(ctx_));
  EXPECT_FALSE(epoll_ready());
  ibv_async_event event{};
  errno = 0;
  EXPECT_EQ(ibv_get_async_event(ctx_, &event), -1);
  EXPECT_EQ(errno, EAGAIN);

  ASSERT_EQ(fabric::raise_event(a_, IBV_EVENT_PATH_MIG), 0);
  ASSERT_EQ(fabric::raise_event(b_, IBV_EVENT_PATH_MIG), 0);
  EXPECT_TRUE(readable(ctx_));
  EXPECT_TRUE(epoll_ready());
  // Events come out in the order they were raised.
  ibv_async_event first = next_event(ctx_);
  ASSERT_EQ(first.event_type, IBV_EVENT_PATH_MIG);
  EXPECT_EQ(first.element.qp, a_);
  EXPECT_TRUE(readable(ctx_)) << "one event is still queued";
  EXPECT_TRUE(epoll_ready());
  ibv_async_event second = next_event(ctx_);
  ASSERT_EQ(second.event_type, IBV_EVENT_PATH_MIG);
  EXPECT_EQ(second.element.qp, b_);
  // Retrieved, not yet acknowledged: nothing left to read.
  EXPECT_FALSE(readable(ctx_));
  EXPECT_FALSE(epoll_ready());
  ibv_ack_async_event(&first);
  ibv_ack_async_event(&second);
  EXPECT_FALSE(readable(ctx_));
  expect_no_event(ctx_);
  close(ep);
}

TEST_F(AsyncEvents, AnEventRaisedWhileTheApplicationWaitsIsRetrievedOnceReadable) {
  // poll(2) without a timeout to speak of: it returns when the other thread
  // raises the event, not after a delay.
  std::thread raiser([this] { EXPECT_EQ(fabric::raise_event(b_, IBV_EVENT_SQ_DRAINED), 0); });
  EXPECT_TRUE(readable(ctx_, 30000));
  raiser.join();
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_SQ_DRAINED);
  EXPECT_EQ(event.element.qp, b_);
  ibv_ack_async_event(&event);
  EXPECT_FALSE(readable(ctx_));

  // A blocking ibv_get_async_event is woken the same way.
  set_nonblocking(ctx_->async_fd, false);
  raiser = std::thread([this] { EXPECT_EQ(fabric::raise_event(a_, IBV_EVENT_PATH_MIG), 0); });
  ibv_async_event blocked{};
  EXPECT_EQ(ibv_get_async_event(ctx_, &blocked), 0);
  raiser.join();
  ASSERT_EQ(blocked.event_type, IBV_EVENT_PATH_MIG);
  EXPECT_EQ(blocked.element.qp, a_);
  ibv_ack_async_event(&blocked);
  set_nonblocking(ctx_->async_fd, true);
  expect_no_event(ctx_);
}

// ---- affiliated QP events ---------------------------------------------------

TEST_F(AsyncEvents, PathMigErrIsReportedOnItsQpWhichStaysInRts) {
  ASSERT_EQ(fabric::raise_event(a_, IBV_EVENT_PATH_MIG_ERR), 0);
  EXPECT_TRUE(readable(ctx_));
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_PATH_MIG_ERR);
  EXPECT_EQ(event.element.qp, a_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(a_->events_completed, 1u);
  EXPECT_EQ(b_->events_completed, 0u);
  expect_no_event(ctx_);
  // The migration failed; the QP goes on on its primary path.
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
  EXPECT_EQ(write_a_to_b(1), IBV_WC_SUCCESS);
}

TEST_F(AsyncEvents, SqDrainedIsReportedOnlyWhenRequestedAtTheTransitionToSqd) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_SQD;
  attr.en_sqd_async_notify = 1;
  ASSERT_EQ(ibv_modify_qp(a_, &attr, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_SQ_DRAINED);
  EXPECT_EQ(event.element.qp, a_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(state_of(a_), IBV_QPS_SQD);
  // Without IBV_QP_EN_SQD_ASYNC_NOTIFY: drained, but no event.
  ASSERT_EQ(ibv_modify_qp(b_, &attr, IBV_QP_STATE), 0);
  EXPECT_EQ(state_of(b_), IBV_QPS_SQD);
  expect_no_event(ctx_);
}

// IBV_EVENT_COMM_EST: the first message that reaches a QP still in RTR.
TEST_F(SimDevice, FirstMessageReceivedInRtrRaisesCommEstOnce) {
  set_nonblocking(ctx_->async_fd, true);
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* a = create_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* b = create_qp(IBV_QPT_RC, cq, cq);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num,
                           .dlid = lid(),
                           .grh = grh(),
                           .access = IBV_ACCESS_REMOTE_WRITE,
                           .stop_at = IBV_QPS_RTR}),
            0);
  alignas(8) char buf[64] = "hello";
  ibv_mr* mr = reg(buf, sizeof buf);
  expect_no_event(ctx_);
  for (uint64_t id = 1; id <= 2; ++id) {
    ASSERT_EQ(post_send(a, IBV_WR_RDMA_WRITE, id, mr, buf, 8, IBV_SEND_SIGNALED,
                        reinterpret_cast<uintptr_t>(buf + 32), mr->rkey),
              0);
    auto wcs = poll(cq, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    if (id == 1) {
      ibv_async_event event = next_event(ctx_);
      ASSERT_EQ(event.event_type, IBV_EVENT_COMM_EST);
      EXPECT_EQ(event.element.qp, b);
      ibv_ack_async_event(&event);
    }
    expect_no_event(ctx_);  // once, not for every message
  }
  EXPECT_EQ(state_of(b), IBV_QPS_RTR);  // the event does not move the QP
}

// ---- unaffiliated port events -----------------------------------------------

// Puts the port's LID back at the end of the test, whatever happened: the
// device is shared by every test of the process.
struct RestoreLid {
  ibv_context* ctx;
  uint16_t lid;
  ~RestoreLid() { fabric::set_port_lid(ctx, 1, lid); }
};

// A second context of a device, closed whatever happens (a device stays
// dead after DEVICE_FATAL while any context of it is open).
struct ExtraContext {
  ibv_context* ctx;
  ~ExtraContext() {
    if (ctx != nullptr) ibv_close_device(ctx);
  }
};

// RoCE has no LIDs (set_port_lid: EINVAL); the RoCE counterpart is
// RoceAsyncEvents.GidChangeOfTheAddressedGidLeavesNothingThere.
TEST_F(InfiniBandAsyncEvents, LidChangeReachesEveryContextOfTheDeviceAndTheOldLidIsGone) {
  ExtraContext extra{ibv_open_device(device_)};  // a second context of vfsim0
  ibv_context* other = extra.ctx;
  ASSERT_NE(other, nullptr);
  set_nonblocking(other->async_fd, true);
  const uint16_t old_lid = lid();
  constexpr uint16_t kNewLid = 0x1234;
  ASSERT_NE(old_lid, kNewLid);
  {
    RestoreLid restore{ctx_, old_lid};
    ASSERT_EQ(fabric::set_port_lid(ctx_, 1, kNewLid), 0);
    for (ibv_context* ctx : {ctx_, other}) {
      EXPECT_TRUE(readable(ctx));
      ibv_async_event event = next_event(ctx);
      ASSERT_EQ(event.event_type, IBV_EVENT_LID_CHANGE);
      EXPECT_EQ(event.element.port_num, 1);
      ibv_ack_async_event(&event);
      expect_no_event(ctx);
      EXPECT_EQ(lid(ctx), kNewLid);
    }
    // a_ still addresses b_ at the old LID: nothing answers there any more.
    EXPECT_EQ(write_a_to_b(1), IBV_WC_RETRY_EXC_ERR);
    // Setting the LID it already has changes nothing.
    ASSERT_EQ(fabric::set_port_lid(ctx_, 1, kNewLid), 0);
    expect_no_event(ctx_);
  }
  EXPECT_EQ(lid(), old_lid);
  ibv_async_event event = next_event(other);
  ASSERT_EQ(event.event_type, IBV_EVENT_LID_CHANGE);
  ibv_ack_async_event(&event);
}

TEST_F(RoceAsyncEvents, PortHasNoLidToChange) {
  EXPECT_EQ(fabric::set_port_lid(ctx_, 1, 0x1234), EINVAL);
  expect_no_event(ctx_);
}

TEST_F(RoceAsyncEvents, GidChangeOfTheAddressedGidLeavesNothingThere) {
  // a_ addresses b_ (same port) by its GID on RoCE, by its LID on
  // InfiniBand: there a GID change changes no path.
  const ibv_global_route route = grh();
  ibv_gid moved = route.dgid;
  moved.raw[15] ^= 0x55;
  ASSERT_EQ(fabric::set_gid(ctx_, 1, route.sgid_index, moved), 0);
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_GID_CHANGE);
  ibv_ack_async_event(&event);
  // a_'s path still names the old GID: nothing answers there any more.
  EXPECT_EQ(write_a_to_b(1), IBV_WC_RETRY_EXC_ERR);
  ASSERT_EQ(fabric::set_gid(ctx_, 1, route.sgid_index, route.dgid), 0);
  event = next_event(ctx_);
  ibv_ack_async_event(&event);
}

TEST_F(AsyncEvents, GidChangeIsReportedAndQueryGidShowsTheNewGid) {
  constexpr int kIndex = 1;
  ibv_gid old_gid{};
  ASSERT_EQ(ibv_query_gid(ctx_, 1, kIndex, &old_gid), 0);
  ibv_gid new_gid{};
  new_gid.global.subnet_prefix = htobe64(0xfe80'0000'0000'0000ull);
  new_gid.global.interface_id = htobe64(0x0123'4567'89ab'cdefull);
  ASSERT_EQ(fabric::set_gid(ctx_, 1, kIndex, new_gid), 0);
  EXPECT_TRUE(readable(ctx_));
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_GID_CHANGE);
  EXPECT_EQ(event.element.port_num, 1);
  ibv_ack_async_event(&event);
  expect_no_event(ctx_);
  ibv_gid gid{};
  EXPECT_EQ(ibv_query_gid(ctx_, 1, kIndex, &gid), 0);
  EXPECT_EQ(std::memcmp(&gid, &new_gid, sizeof gid), 0);

  ASSERT_EQ(fabric::set_gid(ctx_, 1, kIndex, old_gid), 0);
  event = next_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_GID_CHANGE);
  ibv_ack_async_event(&event);
  EXPECT_EQ(ibv_query_gid(ctx_, 1, kIndex, &gid), 0);
  EXPECT_EQ(std::memcmp(&gid, &old_gid, sizeof gid), 0);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(fabric::set_gid(ctx_, 1, port.gid_tbl_len, new_gid), EINVAL);  // beyond the table
}

// ---- destroy with unacknowledged events --------------------------------------
//
// libibverbs' ibv_destroy_qp and ibv_destroy_srq wait until every async event
// reported for the object is acknowledged: forever, if the application
// never acks. The simulated device diagnoses it in one line and fails with
// EBUSY, leaving the object alive (VERBFAULT_DESTROY_CQ_UNACKED=fail, the
// default, as for ibv_destroy_cq).

TEST_F(AsyncEvents, DestroyQpWithAnUnackedEventIsDiagnosedAndRefusedUntilAcked) {
  ASSERT_EQ(fabric::raise_event(a_, IBV_EVENT_PATH_MIG), 0);
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.element.qp, a_);
  const std::string qp_num = std::to_string(a_->qp_num);
  for (int attempt = 0; attempt < 2; ++attempt) {
    ::testing::internal::CaptureStderr();
    errno = 0;
    ASSERT_EQ(ibv_destroy_qp(a_), EBUSY);
    EXPECT_EQ(errno, EBUSY);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(one_line_with(err, "verbfault: ibv_destroy_qp(qp#"));
    EXPECT_TRUE(one_line_with(err, ", qp_num " + qp_num +
                                       "): 1 async events reported, 0 acknowledged; libibverbs "
                                       "would wait forever; failing with EBUSY\n"));
  }
  // Still alive and working.
  EXPECT_EQ(state_of(a_), IBV_QPS_RTS);
  EXPECT_EQ(write_a_to_b(7), IBV_WC_SUCCESS);
  ibv_ack_async_event(&event);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ibv_destroy_qp(a_), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(AsyncEvents, DestroyQpWithMoreAcksThanEventsIsDiagnosedToo) {
  ibv_async_event never_reported{};
  never_reported.event_type = IBV_EVENT_PATH_MIG;
  never_reported.element.qp = b_;
  ibv_ack_async_event(&never_reported);
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(ibv_destroy_qp(b_), EBUSY);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(one_line_with(err, "0 async events reported, 1 acknowledged"));
  EXPECT_EQ(state_of(b_), IBV_QPS_RTS);
}

TEST_F(AsyncEvents, EventsNeverRetrievedDoNotHoldUpDestroyQp) {
  ASSERT_EQ(fabric::raise_event(a_, IBV_EVENT_PATH_MIG), 0);
  ASSERT_TRUE(readable(ctx_));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ibv_destroy_qp(a_), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  // The destroyed QP's event is gone with it.
  EXPECT_FALSE(readable(ctx_));
  expect_no_event(ctx_);
}

TEST_F(SimDevice, DestroySrqWithAnUnackedEventIsDiagnosedAndRefusedUntilAcked) {
  set_nonblocking(ctx_->async_fd, true);
  ibv_srq_init_attr init{};
  init.attr.max_wr = 4;
  init.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &init);
  ASSERT_NE(srq, nullptr);
  ASSERT_EQ(fabric::raise_event(srq, IBV_EVENT_SRQ_LIMIT_REACHED), 0);
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.element.srq, srq);
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(ibv_destroy_srq(srq), EBUSY);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(one_line_with(err, "verbfault: ibv_destroy_srq(srq#"));
  EXPECT_TRUE(one_line_with(err,
                            "): 1 async events reported, 0 acknowledged; libibverbs would wait "
                            "forever; failing with EBUSY\n"));
  // Still alive and working.
  char buf[8];
  ibv_mr* mr = reg(buf, sizeof buf);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), sizeof buf, mr->lkey};
  ibv_recv_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
  ibv_srq_attr attr{};
  EXPECT_EQ(ibv_query_srq(srq, &attr), 0);
  ibv_ack_async_event(&event);
  EXPECT_EQ(srq->events_completed, 1u);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// The async events of a CQ count too (ibv_destroy_cq waits for them in
// libibverbs as for its completion events).
TEST_F(SimDevice, DestroyCqWithAnUnackedCqErrIsDiagnosedAndRefusedUntilAcked) {
  set_nonblocking(ctx_->async_fd, true);
  ibv_cq* cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ASSERT_EQ(fabric::raise_event(cq, IBV_EVENT_CQ_ERR), 0);
  ibv_async_event event = next_event(ctx_);
  ASSERT_EQ(event.event_type, IBV_EVENT_CQ_ERR);
  ASSERT_EQ(event.element.cq, cq);
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(ibv_destroy_cq(cq), EBUSY);
  EXPECT_TRUE(one_line_with(::testing::internal::GetCapturedStderr(),
                            "0 completion events reported, 0 acknowledged; 1 async events "
                            "reported, 0 acknowledged; libibverbs would wait forever; failing "
                            "with EBUSY\n"));
  ibv_ack_async_event(&event);
  EXPECT_EQ(cq->async_events_completed, 1u);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

// VERBFAULT_DESTROY_CQ_UNACKED=wait reproduces libibverbs: the destroy is
// diagnosed, then waits until another thread acks, then succeeds. The
// policy is read once per process, so this runs in a fresh process (a
// "threadsafe" death test re-executes the binary) with the variable set.
using AsyncEventsWaitPolicyDeathTest = AsyncEvents;

TEST_F(AsyncEventsWaitPolicyDeathTest, DestroyQpWaitsForTheAckLikeLibibverbs) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_EQ(setenv("VERBFAULT_DESTROY_CQ_UNACKED", "wait", 1), 0);
  EXPECT_EXIT(
      {
        // A watchdog for a broken device only (a destroy that never
        // returns); a passing run is over long before it.
        alarm(30);
        // stderr goes to a pipe: the acker reads the diagnosis from it, so
        // it acks only once the destroy waits, and copies it back.
        int pipe_fds[2];
        if (pipe(pipe_fds) != 0) std::_Exit(10);
        const int saved_stderr = dup(2);
        dup2(pipe_fds[1], 2);
        if (fabric::raise_event(a_, IBV_EVENT_PATH_MIG) != 0) std::_Exit(11);
        ibv_async_event event{};
        if (ibv_get_async_event(ctx_, &event) != 0) std::_Exit(12);
        std::atomic<bool> acking{false};
        std::thread acker([&] {
          std::string text;
          char c;
          while (text.find("; waiting\n") == std::string::npos && read(pipe_fds[0], &c, 1) == 1)
            text += c;
          if (write(saved_stderr, text.data(), text.size()) < 0) std::_Exit(13);
          // Only a waiting destroy has left the QP alive to be acked.
          if (text.find("; waiting\n") == std::string::npos) return;
          acking = true;
          ibv_ack_async_event(&event);
        });
        const int rc = ibv_destroy_qp(a_);
        if (!acking) std::_Exit(15);  // returned before the ack
        dup2(saved_stderr, 2);
        close(pipe_fds[1]);  // end of file for an acker still reading
        acker.join();
        std::_Exit(rc == 0 ? 0 : 14);
      },
      ::testing::ExitedWithCode(0),
      "verbfault: ibv_destroy_qp\\(qp#[0-9]+, qp_num [0-9]+\\): 1 async events reported, 0 "
      "acknowledged; libibverbs would wait forever; waiting");
  unsetenv("VERBFAULT_DESTROY_CQ_UNACKED");
}

}  // namespace
}  // namespace verbfault::testing

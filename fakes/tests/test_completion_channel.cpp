// Completion events of the simulated device: ibv_create_comp_channel(3),
// ibv_req_notify_cq(3), ibv_get_cq_event(3) and ibv_ack_cq_events(3).
#include "channel_fixture.h"

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <set>
#include <thread>

namespace verbfault::testing {
namespace {

// ---- the channel and its fd -------------------------------------------------

using Channel = ChannelRcPair;

TEST_F(Channel, CqRecordsItsChannel) {
  EXPECT_EQ(cq_a_->channel, channel_);
  EXPECT_EQ(cq_a_->cq_context, &tag_a_);
  EXPECT_EQ(channel_->context, ctx_);
}

TEST_F(Channel, FdIsARealDescriptor) {
  ASSERT_GE(channel_->fd, 0);
  EXPECT_GE(fcntl(channel_->fd, F_GETFD), 0);
  struct stat st {};
  EXPECT_EQ(fstat(channel_->fd, &st), 0);
}

TEST_F(Channel, FdIsNotReadableBeforeAnyEvent) {
  EXPECT_FALSE(readable());
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  EXPECT_FALSE(readable()) << "arming alone raises nothing";
}

TEST_F(Channel, FdBecomesReadableWhenAnArmedCqGetsACompletion) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  EXPECT_TRUE(readable());
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  ASSERT_EQ(ibv_get_cq_event(channel_, &cq, &context), 0);
  EXPECT_FALSE(readable()) << "the only event was taken";
  ibv_ack_cq_events(cq, 1);
}

TEST_F(Channel, FdReportsReadinessThroughEpoll) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 42;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, channel_->fd, &ev), 0);
  epoll_event out[4]{};
  EXPECT_EQ(epoll_wait(ep, out, 4, 0), 0);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(epoll_wait(ep, out, 4, 0), 1);
  EXPECT_EQ(out[0].data.u64, 42u);
  EXPECT_TRUE(out[0].events & EPOLLIN);
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  ASSERT_EQ(ibv_get_cq_event(channel_, &cq, &context), 0);
  ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(epoll_wait(ep, out, 4, 0), 0) << "level-triggered: nothing left";
  close(ep);
}

TEST_F(Channel, GetCqEventReturnsTheCqAndItsContext) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(ibv_req_notify_cq(cq_b_, 0), 0);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 2, mr_a_, buf_a_, 8), 0);
  std::set<std::pair<ibv_cq*, void*>> events;
  for (int i = 0; i < 2; ++i) {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    ASSERT_EQ(ibv_get_cq_event(channel_, &cq, &context), 0);
    events.insert({cq, context});
    ibv_ack_cq_events(cq, 1);
  }
  EXPECT_EQ(events.count({cq_a_, &tag_a_}), 1u);
  EXPECT_EQ(events.count({cq_b_, &tag_b_}), 1u);
}

TEST_F(Channel, NonblockingGetWithoutAnEventIsEagain) {
  set_nonblocking();
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  errno = 0;
  EXPECT_EQ(ibv_get_cq_event(channel_, &cq, &context), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(Channel, NonblockingGetReturnsAPendingEvent) {
  set_nonblocking();
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  ASSERT_EQ(ibv_get_cq_event(channel_, &cq, &context), 0);
  EXPECT_EQ(cq, cq_a_);
  EXPECT_EQ(context, &tag_a_);
  ibv_ack_cq_events(cq, 1);
}

TEST_F(Channel, BlockingGetIsWokenByACompletionFromAnotherThread) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  std::atomic<bool> returned{false};
  int rc = -2;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  std::thread waiter([&] {
    rc = ibv_get_cq_event(channel_, &cq, &context);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned) << "ibv_get_cq_event returned without an event";
  ASSERT_EQ(write_a_to_b(1), 0);
  waiter.join();  // a missed wakeup hangs here until the ctest timeout
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(cq, cq_a_);
  EXPECT_EQ(context, &tag_a_);
  if (rc == 0) ibv_ack_cq_events(cq, 1);
}

// A signal handler interrupts a blocking ibv_get_cq_event as it interrupts
// the read(2) of a real channel's fd (signal(7)): without SA_RESTART the
// call fails with EINTR (qperf's timed loops end on SIGALRM so); with
// SA_RESTART it goes on waiting.
void on_usr1(int) {}

// Installs on_usr1 for SIGUSR1 with `flags` for the test's life.
struct Usr1Handler {
  explicit Usr1Handler(int flags) {
    struct sigaction action {};
    action.sa_handler = on_usr1;
    action.sa_flags = flags;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, &saved);
  }
  ~Usr1Handler() { sigaction(SIGUSR1, &saved, nullptr); }
  struct sigaction saved {};
};

TEST_F(Channel, ASignalWithoutRestartEndsABlockingGetWithEintr) {
  Usr1Handler handler(0);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  std::atomic<bool> returned{false};
  int rc = -2, error = 0;
  std::thread waiter([&] {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    rc = ibv_get_cq_event(channel_, &cq, &context);
    error = errno;
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_FALSE(returned);
  // Again until it returns: a signal that comes before the waiter sleeps
  // interrupts nothing, as before a real read(2) (a loaded machine).
  for (int i = 0; i < 500 && !returned; ++i) {
    pthread_kill(waiter.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  waiter.join();  // never interrupted: hangs here until the ctest timeout
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(error, EINTR);
}

TEST_F(Channel, ASignalWithRestartLeavesABlockingGetWaiting) {
  Usr1Handler handler(SA_RESTART);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  std::atomic<bool> returned{false};
  int rc = -2;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  std::thread waiter([&] {
    rc = ibv_get_cq_event(channel_, &cq, &context);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pthread_kill(waiter.native_handle(), SIGUSR1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned) << "restarted, as read(2) is under SA_RESTART";
  ASSERT_EQ(write_a_to_b(1), 0);
  waiter.join();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(cq, cq_a_);
  if (rc == 0) ibv_ack_cq_events(cq, 1);
}

TEST_F(Channel, NonblockingGetIsEagainWhileASendWaitsForAReceiver) {
  // rnr_retry 7: the SEND is retried for as long as b_ has no receive.
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 1, mr_a_, buf_a_, 8), 0);
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(post_recv(b_, 2, mr_b_, buf_b_, 64), 0);
  ibv_cq* cq = nullptr;
  for (int i = 0; i < 100 && cq == nullptr; ++i) cq = try_get_event();
  EXPECT_EQ(cq, cq_a_) << "the send completes once the receive is there";
  if (cq != nullptr) ibv_ack_cq_events(cq, 1);
}

TEST_F(Channel, BlockingGetSeesASendCompleteWhenAnotherThreadPostsTheReceive) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 1, mr_a_, buf_a_, 8), 0);  // RNR: no receive yet
  int rc = -2;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  std::thread waiter([&] { rc = ibv_get_cq_event(channel_, &cq, &context); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The waiter must not keep the device to itself while the SEND retries.
  ASSERT_EQ(post_recv(b_, 2, mr_b_, buf_b_, 64), 0);
  waiter.join();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(cq, cq_a_);
  if (rc == 0) ibv_ack_cq_events(cq, 1);
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
}

TEST_F(Channel, DestroyWithACqAttachedIsEbusy) {
  EXPECT_EQ(ibv_destroy_comp_channel(channel_), EBUSY);
  ASSERT_EQ(ibv_destroy_qp(a_), 0);
  ASSERT_EQ(ibv_destroy_qp(b_), 0);
  ASSERT_EQ(ibv_destroy_cq(cq_a_), 0);
  EXPECT_EQ(ibv_destroy_comp_channel(channel_), EBUSY) << "cq_b_ still uses it";
  ASSERT_EQ(ibv_destroy_cq(cq_b_), 0);
  EXPECT_EQ(ibv_destroy_comp_channel(channel_), 0);
}

TEST_F(SimDevice, UnusedCompletionChannelCanBeDestroyed) {
  ibv_comp_channel* channel = ibv_create_comp_channel(ctx_);
  ASSERT_NE(channel, nullptr);
  EXPECT_GE(channel->fd, 0);
  EXPECT_EQ(channel->context, ctx_);
  EXPECT_EQ(ibv_destroy_comp_channel(channel), 0);
}

// ---- ibv_req_notify_cq(3) ---------------------------------------------------

using Notify = ChannelRcPair;

TEST_F(Notify, NoEventWithoutArming) {
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(poll(cq_a_, 1).size(), 1u);
  EXPECT_FALSE(readable());
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(Notify, OneEventPerArm) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(write_a_to_b(2), 0);
  EXPECT_EQ(try_get_event(), cq_a_);
  EXPECT_EQ(try_get_event(), nullptr) << "the request is one-shot";
  EXPECT_EQ(errno, EAGAIN);
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(poll(cq_a_, 2).size(), 2u) << "both completions are in the CQ";
}

TEST_F(Notify, ArmingTwiceBeforeACompletionStillGivesOneEvent) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(write_a_to_b(2), 0);
  EXPECT_EQ(try_get_event(), cq_a_);
  EXPECT_EQ(try_get_event(), nullptr);
  ibv_ack_cq_events(cq_a_, 1);
}

TEST_F(Notify, RearmingGivesAnEventForTheNextCompletion) {
  for (uint64_t round = 1; round <= 3; ++round) {
    ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
    ASSERT_EQ(write_a_to_b(round), 0);
    EXPECT_EQ(try_get_event(), cq_a_) << "round " << round;
    auto wc = poll(cq_a_, 1);
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].wr_id, round);
  }
  ibv_ack_cq_events(cq_a_, 3);
}

TEST_F(Notify, CompletionsQueuedBeforeArmingRaiseNoEvent) {
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  EXPECT_FALSE(readable()) << "the completion was in the CQ at arm time";
  EXPECT_EQ(try_get_event(), nullptr);
  ASSERT_EQ(write_a_to_b(2), 0);  // a new completion after the arm
  EXPECT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
}

TEST_F(Notify, SolicitedOnlyIgnoresAnUnsolicitedReceive) {
  ASSERT_EQ(ibv_req_notify_cq(cq_b_, 1), 0);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 2, mr_a_, buf_a_, 8), 0);
  auto wc = poll(cq_b_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(Notify, SolicitedOnlyIgnoresASuccessfulSendCompletion) {
  // The send side of a solicited SEND is an ordinary successful completion.
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 1), 0);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 2, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED),
            0);
  ASSERT_EQ(poll(cq_a_, 1).size(), 1u);
  EXPECT_EQ(try_get_event(), nullptr);
}

TEST_F(Notify, SolicitedOnlyFiresForASolicitedSend) {
  ASSERT_EQ(ibv_req_notify_cq(cq_b_, 1), 0);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 2, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED),
            0);
  void* context = nullptr;
  EXPECT_EQ(try_get_event(&context), cq_b_);
  EXPECT_EQ(context, &tag_b_);
  ibv_ack_cq_events(cq_b_, 1);
}

TEST_F(Notify, SolicitedOnlyIsWaitedOutByUnsolicitedReceives) {
  // Unsolicited receives leave a solicited-only request pending.
  ASSERT_EQ(ibv_req_notify_cq(cq_b_, 1), 0);
  ASSERT_EQ(post_recv(b_, 1, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(post_recv(b_, 2, mr_b_, buf_b_ + 64, 64), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 3, mr_a_, buf_a_, 8), 0);
  EXPECT_EQ(try_get_event(), nullptr);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 4, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED),
            0);
  EXPECT_EQ(try_get_event(), cq_b_);
  ibv_ack_cq_events(cq_b_, 1);
}

TEST_F(Notify, SolicitedOnlyFiresForAnErrorCompletion) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 1), 0);
  // An RDMA WRITE with an rkey nobody registered: IBV_WC_REM_ACCESS_ERR.
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 9, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(buf_b_), mr_b_->rkey ^ 0x5a5a00),
            0);
  EXPECT_EQ(try_get_event(), cq_a_);
  ibv_ack_cq_events(cq_a_, 1);
  auto wc = poll(cq_a_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(Notify, SolicitedOnlyFiresForAFlushedReceive) {
  ASSERT_EQ(ibv_req_notify_cq(cq_b_, 1), 0);
  ASSERT_EQ(post_recv(b_, 5, mr_b_, buf_b_, 64), 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b_, &attr, IBV_QP_STATE), 0);
  EXPECT_EQ(try_get_event(), cq_b_);
  ibv_ack_cq_events(cq_b_, 1);
  auto wc = poll(cq_b_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc[0].wr_id, 5u);
}

// ---- ibv_ack_cq_events(3) ---------------------------------------------------

using AckEvents = ChannelRcPair;

TEST_F(AckEvents, CompEventsCompletedCountsAcks) {
  for (uint64_t i = 1; i <= 3; ++i) {
    ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
    ASSERT_EQ(write_a_to_b(i), 0);
    ASSERT_EQ(try_get_event(), cq_a_);
  }
  EXPECT_EQ(cq_a_->comp_events_completed, 0u);
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(cq_a_->comp_events_completed, 1u);
  ibv_ack_cq_events(cq_a_, 2);  // acks may be batched
  EXPECT_EQ(cq_a_->comp_events_completed, 3u);
  EXPECT_EQ(cq_b_->comp_events_completed, 0u);
}

TEST_F(AckEvents, DestroyCqWithUnackedEventsIsEbusyUntilAcked) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_EQ(ibv_req_notify_cq(cq_b_, 0), 0);  // a second CQ's event is no excuse
  ASSERT_EQ(try_get_event(), cq_a_);
  ASSERT_EQ(ibv_destroy_qp(a_), 0);
  // libibverbs would block forever here; the simulated device diagnoses.
  EXPECT_EQ(ibv_destroy_cq(cq_a_), EBUSY);
  ibv_ack_cq_events(cq_a_, 1);
  EXPECT_EQ(ibv_destroy_cq(cq_a_), 0);
}

TEST_F(AckEvents, DestroyCqWithUnreadEventsSucceeds) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
  ASSERT_EQ(write_a_to_b(1), 0);
  ASSERT_TRUE(readable());
  ASSERT_EQ(ibv_destroy_qp(a_), 0);
  // Events never taken with ibv_get_cq_event need no ack.
  EXPECT_EQ(ibv_destroy_cq(cq_a_), 0);
  EXPECT_FALSE(readable()) << "the destroyed CQ's event is gone";
  EXPECT_EQ(try_get_event(), nullptr);
  EXPECT_EQ(errno, EAGAIN);
}

}  // namespace
}  // namespace verbfault::testing

// The simulated device's legal freedoms (sim/freedoms.h): under a seed it
// draws the order across work queues of completions entering a CQ
// together, and an extra event when a non-empty CQ is armed; without one it
// takes the canonical choice. Each freedom stays within what the verbs
// allow, is exercised by some seed, and replays exactly under the same
// seed. How many completions a poll returns is no freedom: all it can
// (ibv_poll_cq(3)), seed or not; fewer is the partial_poll fault's.
#include "channel_fixture.h"

#include <verbfault/session.h>

#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace verbfault::testing {
namespace {

constexpr std::uint64_t kSeeds = 48;

// A session under `seed` (no rules: only the freedoms), or none.
std::unique_ptr<Session> open_session(std::optional<std::uint64_t> seed) {
  if (!seed) return nullptr;
  return std::make_unique<Session>(Plan{}, *seed, Freedoms::drawn);
}

class PollFreedom : public RcPair {
 protected:
  void SetUp() override { SimDevice::SetUp(); }

  // In a session under `seed`, a fresh pair; six writes a_ -> b_, then
  // polls of four until all six are back: the count of each poll.
  std::vector<int> six_writes_polled_by_four(std::optional<std::uint64_t> seed) {
    auto session = open_session(seed);
    build_pair(nullptr, nullptr, nullptr);
    for (std::uint64_t i = 0; i < 6; ++i)
      EXPECT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 10 + i, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED,
                          reinterpret_cast<uintptr_t>(buf_b_), mr_b_->rkey),
                0);
    std::vector<int> counts;
    std::uint64_t next = 10;
    while (next < 16 && counts.size() < 20) {
      ibv_wc wc[4];
      const int n = ibv_poll_cq(cq_a_, 4, wc);
      const int remaining = static_cast<int>(16 - next);
      EXPECT_GE(n, 1) << "a poll never comes back empty while completions wait";
      EXPECT_LE(n, std::min(4, remaining));
      for (int i = 0; i < n; ++i) EXPECT_EQ(wc[i].wr_id, next++) << "one work queue: in order";
      counts.push_back(n);
    }
    EXPECT_EQ(next, 16u);
    EXPECT_EQ(ibv_destroy_qp(a_), 0);
    EXPECT_EQ(ibv_destroy_qp(b_), 0);
    EXPECT_EQ(ibv_destroy_cq(cq_a_), 0);
    EXPECT_EQ(ibv_destroy_cq(cq_b_), 0);
    return counts;
  }
};

TEST_F(PollFreedom, WithoutASeedAPollReturnsAllItCan) {
  EXPECT_EQ(six_writes_polled_by_four(std::nullopt), (std::vector<int>{4, 2}));
}

// ibv_poll_cq(3): a poll returns "the first num_entries (or all available
// completions if the CQ contains fewer than this number)"; a poll that
// returns fewer than asked has emptied the CQ (the kernel's ib_poll_cq
// says as much), and an application may stop there. A device that held
// some back would strand them: they were in the CQ when it was re-armed,
// so no event will report them.
TEST_F(PollFreedom, UnderASeedAPollStillReturnsAllItCan) {
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed)
    EXPECT_EQ(six_writes_polled_by_four(seed), (std::vector<int>{4, 2})) << "seed " << seed;
}

// Two QPs completing into one CQ: a SEND from a_ to b_ puts a_'s send
// completion and b_'s receive completion into the CQ in the same step.
class SharedCqFreedom : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    mr_ = reg(buf_, sizeof buf_);
  }

  // In a session under `seed`, a fresh CQ and QPs; three receives on b_,
  // then one post of three SENDs from a_: the order in which the six
  // completions are polled, as (QP a or b, wr_id).
  std::vector<std::pair<char, uint64_t>> three_sends(std::optional<std::uint64_t> seed) {
    auto session = open_session(seed);
    cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    a_ = create_qp(IBV_QPT_RC, cq_, cq_);
    b_ = create_qp(IBV_QPT_RC, cq_, cq_);
    EXPECT_TRUE(cq_ && a_ && b_);
    if (!cq_ || !a_ || !b_) return {};
    EXPECT_EQ(rc_connect(a_, {.dest_qp_num = b_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    EXPECT_EQ(rc_connect(b_, {.dest_qp_num = a_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(post_recv(b_, 100 + i, mr_, buf_ + 64 * i, 64), 0);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_ + 512), 8, mr_->lkey};
    ibv_send_wr wrs[3] = {};
    for (int i = 0; i < 3; ++i) {
      wrs[i].wr_id = 200 + static_cast<uint64_t>(i);
      wrs[i].sg_list = &sge;
      wrs[i].num_sge = 1;
      wrs[i].opcode = IBV_WR_SEND;
      wrs[i].send_flags = IBV_SEND_SIGNALED;
      wrs[i].next = i < 2 ? &wrs[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(a_, wrs, &bad), 0);
    std::vector<std::pair<char, uint64_t>> order;
    for (const ibv_wc& wc : poll(cq_, 6)) {
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
      order.emplace_back(wc.qp_num == a_->qp_num ? 'a' : 'b', wc.wr_id);
    }
    EXPECT_EQ(order.size(), 6u);
    EXPECT_EQ(ibv_destroy_qp(a_), 0);
    EXPECT_EQ(ibv_destroy_qp(b_), 0);
    EXPECT_EQ(ibv_destroy_cq(cq_), 0);
    return order;
  }

  ibv_cq* cq_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
  ibv_mr* mr_ = nullptr;
  alignas(64) uint8_t buf_[1024] = {};
};

TEST_F(SharedCqFreedom, EachWorkQueueKeepsItsOrderWhateverTheInterleaving) {
  std::set<std::vector<std::pair<char, uint64_t>>> interleavings;
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    const auto order = three_sends(seed);
    std::vector<uint64_t> sends, receives;
    for (auto [qp, wr_id] : order) (qp == 'a' ? sends : receives).push_back(wr_id);
    EXPECT_EQ(sends, (std::vector<uint64_t>{200, 201, 202})) << "seed " << seed;
    EXPECT_EQ(receives, (std::vector<uint64_t>{100, 101, 102})) << "seed " << seed;
    interleavings.insert(order);
  }
  EXPECT_GT(interleavings.size(), 2u) << "the seeds explore different interleavings";
  EXPECT_EQ(three_sends(5), three_sends(5)) << "the same seed, the same interleaving";
}

TEST_F(SharedCqFreedom, WithoutASeedCompletionsComeInArrivalOrder) {
  // Each SEND completes at the responder, then at the requester when the
  // acknowledgement arrives.
  const std::vector<std::pair<char, uint64_t>> expected = {{'b', 100}, {'a', 200}, {'b', 101},
                                                           {'a', 201}, {'b', 102}, {'a', 202}};
  EXPECT_EQ(three_sends(std::nullopt), expected);
  EXPECT_EQ(three_sends(std::nullopt), expected);
}

// A QP whose SEND fails (its receive WR at b_ is too small) puts the error
// and the flushes of its receive queue into one CQ in one step: the flushes
// exist because of the error (the QP entered ERR with it, IBA 10.8.3.3),
// so no seed puts one ahead of it. An application takes the first error of
// a QP as its cause (rdma-core's tests/utils.py poll_cq raises on it).
TEST_F(SharedCqFreedom, NoFlushComesBeforeTheErrorThatCausedIt) {
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto session = open_session(seed);
    cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    a_ = create_qp(IBV_QPT_RC, cq_, cq_);
    b_ = create_qp(IBV_QPT_RC, cq_, cq_);
    ASSERT_TRUE(cq_ && a_ && b_);
    ASSERT_EQ(rc_connect(a_, {.dest_qp_num = b_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    ASSERT_EQ(rc_connect(b_, {.dest_qp_num = a_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(post_recv(a_, 300 + i, mr_, buf_ + 64 * i, 64), 0);
    ASSERT_EQ(post_recv(b_, 100, mr_, buf_ + 256, 4), 0);  // too small for 8 bytes
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_ + 512), 8, mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 200;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
    std::vector<ibv_wc_status> of_a;
    for (const ibv_wc& wc : poll(cq_, 5))
      if (wc.qp_num == a_->qp_num) of_a.push_back(wc.status);
    const std::vector<ibv_wc_status> expected = {IBV_WC_REM_INV_REQ_ERR, IBV_WC_WR_FLUSH_ERR,
                                                 IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR};
    EXPECT_EQ(of_a, expected) << "seed " << seed;
    EXPECT_EQ(ibv_destroy_qp(a_), 0);
    EXPECT_EQ(ibv_destroy_qp(b_), 0);
    EXPECT_EQ(ibv_destroy_cq(cq_), 0);
  }
}

class ArmFreedom : public ChannelRcPair {
 protected:
  // Arms cq_a_ while it holds one completion: whether an event fires at
  // once. The CQ is drained and the event, if any, acknowledged.
  bool event_when_arming_a_full_cq(std::optional<std::uint64_t> seed) {
    auto session = open_session(seed);
    EXPECT_EQ(write_a_to_b(1), 0);
    EXPECT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
    ibv_cq* cq = try_get_event();
    if (cq != nullptr) ibv_ack_cq_events(cq, 1);
    EXPECT_EQ(poll(cq_a_, 1).size(), 1u) << "the completion is still there";
    return cq == cq_a_;
  }
};

TEST_F(ArmFreedom, ArmingANonEmptyCqMayFireAtOnceUnderASeed) {
  int fired = 0;
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    if (event_when_arming_a_full_cq(seed)) {
      ++fired;
      continue;
    }
    // Still armed: the next completion raises the event and disarms it.
    ASSERT_EQ(write_a_to_b(2), 0);
    ibv_cq* cq = try_get_event();
    ASSERT_EQ(cq, cq_a_);
    ibv_ack_cq_events(cq, 1);
    ASSERT_EQ(poll(cq_a_, 1).size(), 1u);
  }
  EXPECT_GT(fired, 0) << "some seeds fire the event at once";
  EXPECT_LT(fired, static_cast<int>(kSeeds)) << "and some do not";
}

TEST_F(ArmFreedom, ArmingAnEmptyCqNeverFiresAtOnce) {
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto session = open_session(seed);
    ASSERT_EQ(ibv_req_notify_cq(cq_a_, 0), 0);
    errno = 0;
    EXPECT_EQ(try_get_event(), nullptr) << "seed " << seed;
    EXPECT_EQ(errno, EAGAIN);
  }
}

TEST_F(ArmFreedom, WithoutASeedArmingNeverFiresAtOnce) {
  EXPECT_FALSE(event_when_arming_a_full_cq(std::nullopt));
}

}  // namespace
}  // namespace verbfault::testing

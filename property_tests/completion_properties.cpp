// Completion properties of the simulated device, for any mix of work:
// every signaled send WR and every receive that a message consumed yields
// exactly one completion, with its wr_id, in the order posted per work
// queue; never more completions than posted; the bytes arrive intact.
#include "verbs_fixture.h"

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <deque>

namespace verbfault::testing {
namespace {

enum class Op { kSend, kSendImm, kWrite, kWriteImm, kRead };

struct Message {
  Op op;
  uint32_t length;  // bytes, <= kSlot
  bool signaled;
  uint8_t fill;
};

constexpr uint32_t kSlot = 256;
constexpr int kMaxMessages = 24;

// A fresh connected RC pair for every case (a fixture is per TEST, a
// property runs many cases).
class Pair : public RcPair {
 public:
  void TestBody() override {}
  void open() { SetUp(); }
  void close() { TearDown(); }
  using RcPair::a_;
  using RcPair::b_;
  using RcPair::buf_a_;
  using RcPair::buf_b_;
  using RcPair::cq_a_;
  using RcPair::cq_b_;
  using RcPair::mr_a_;
  using RcPair::mr_b_;
  using RcPair::post_recv;
};

rc::Gen<Message> genMessage() {
  return rc::gen::build<Message>(
      rc::gen::set(&Message::op,
                   rc::gen::element(Op::kSend, Op::kSendImm, Op::kWrite, Op::kWriteImm, Op::kRead)),
      rc::gen::set(&Message::length, rc::gen::inRange<uint32_t>(0, kSlot + 1)),
      rc::gen::set(&Message::signaled, rc::gen::arbitrary<bool>()),
      rc::gen::set(&Message::fill, rc::gen::arbitrary<uint8_t>()));
}

bool consumes_receive(Op op) {
  return op == Op::kSend || op == Op::kSendImm || op == Op::kWriteImm;
}

RC_GTEST_PROP(CompletionProperties, EveryWorkRequestCompletesOnceInOrder, ()) {
  const auto messages = *rc::gen::resize(
      kMaxMessages, rc::gen::nonEmpty(rc::gen::container<std::vector<Message>>(genMessage())));
  // How many completions each poll asks for: the application's batch size.
  const auto batch = *rc::gen::inRange(1, 8);

  Pair pair;
  pair.open();
  RC_ASSERT(!::testing::Test::HasFatalFailure());
  const size_t n = messages.size();
  RC_PRE(n * kSlot <= sizeof pair.buf_a_);

  // Receives for every message that consumes one, each with its own slot.
  std::deque<uint64_t> expected_recv;
  for (size_t i = 0; i < n; ++i) {
    if (!consumes_receive(messages[i].op)) continue;
    RC_ASSERT(pair.post_recv(pair.b_, 100 + i, pair.mr_b_, pair.buf_b_ + i * kSlot, kSlot) == 0);
    expected_recv.push_back(100 + i);
  }
  std::deque<uint64_t> expected_send;
  for (size_t i = 0; i < n; ++i) {
    const Message& m = messages[i];
    uint8_t* local = pair.buf_a_ + i * kSlot;
    uint8_t* remote = pair.buf_b_ + i * kSlot;
    std::fill(local, local + kSlot, m.fill);
    ibv_sge sge{reinterpret_cast<uintptr_t>(local), m.length, pair.mr_a_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = m.signaled ? IBV_SEND_SIGNALED : 0;
    wr.imm_data = htobe32(static_cast<uint32_t>(i));
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(remote);
    wr.wr.rdma.rkey = pair.mr_b_->rkey;
    switch (m.op) {
      case Op::kSend:
        wr.opcode = IBV_WR_SEND;
        break;
      case Op::kSendImm:
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        break;
      case Op::kWrite:
        wr.opcode = IBV_WR_RDMA_WRITE;
        break;
      case Op::kWriteImm:
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        break;
      case Op::kRead:
        wr.opcode = IBV_WR_RDMA_READ;
        std::fill(remote, remote + kSlot, static_cast<uint8_t>(m.fill ^ 0xff));
        break;
    }
    ibv_send_wr* bad = nullptr;
    RC_ASSERT(ibv_post_send(pair.a_, &wr, &bad) == 0);
    if (m.signaled) expected_send.push_back(i);
  }

  // Drain both CQs in batches; every completion must be the next expected.
  auto drain = [&](ibv_cq* cq, std::deque<uint64_t>& expected, bool receive) {
    for (int polls = 0; polls < 4 * kMaxMessages; ++polls) {
      ibv_wc wc[8];
      int got = ibv_poll_cq(cq, batch, wc);
      RC_ASSERT(got >= 0);
      RC_ASSERT(got <= batch);
      for (int k = 0; k < got; ++k) {
        RC_ASSERT(wc[k].status == IBV_WC_SUCCESS);
        RC_ASSERT(!expected.empty());  // never more completions than posted
        RC_ASSERT(wc[k].wr_id == expected.front());
        expected.pop_front();
        if (receive) {
          const size_t i = wc[k].wr_id - 100;
          const Message& m = messages[i];
          RC_ASSERT(wc[k].byte_len == m.length);
          RC_ASSERT(((wc[k].wc_flags & IBV_WC_WITH_IMM) != 0) == (m.op != Op::kSend));
        }
      }
    }
    RC_ASSERT(expected.empty());
  };
  drain(pair.cq_a_, expected_send, false);
  drain(pair.cq_b_, expected_recv, true);

  // The data: sends and writes land in the responder's slot, reads in ours.
  for (size_t i = 0; i < n; ++i) {
    const Message& m = messages[i];
    const uint8_t* landed = m.op == Op::kRead ? pair.buf_a_ + i * kSlot : pair.buf_b_ + i * kSlot;
    const uint8_t want = m.op == Op::kRead ? static_cast<uint8_t>(m.fill ^ 0xff) : m.fill;
    RC_ASSERT(std::all_of(landed, landed + m.length, [&](uint8_t b) { return b == want; }));
  }
  pair.close();
}

}  // namespace
}  // namespace verbfault::testing

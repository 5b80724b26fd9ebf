// The requester's window of RC requests in flight to another process
// (sim/transport/requester.cpp, kWindow) moves with the answers' arrival, as an
// HCA's send queue moves with the ACKs whether or not the application
// polls: the answers wait in the CQ for a poll (delivery.h), their WQEs do
// not hold the rest back.
#include "two_members.h"
#include "wire_process.h"

#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace verbfault::sim {
namespace {

using wire::testing::Child;
using wire::testing::ScratchFabric;
using wire::testing::spawn;

// More than the window of 128 requests in flight.
constexpr uint32_t kWrites = 200;
constexpr std::size_t kSlot = 64;

// Whether every slot of `buffer` holds its number, waiting for it on the
// wall clock (as riostream spins on memory) for at most 10 s.
bool all_landed(volatile uint8_t* buffer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool all = true;
    for (uint32_t i = 0; i < kWrites && all; ++i) all = buffer[i * kSlot] == uint8_t(i + 1);
    if (all) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The requester posts 200 signaled RDMA WRITEs and, without polling, waits
// on a pipe; the target, without a verbs call, waits for all 200 to land.
// Before the fix the 72 behind the window never left: their place was held
// by ACKs waiting in the CQ for a poll nobody made.
TEST(RequesterWindow, TheSendQueueMovesOnWithoutAPoll) {
  ScratchFabric fabric("window");
  Pipe to_target;
  Pipe to_requester;
  Child target = spawn([&] {
    Member m(fabric.name(), 1, 256);
    std::vector<uint8_t> buffer(kWrites * kSlot, 0);
    ibv_mr* mr = m.reg(buffer.data(), buffer.size());
    Card requester;
    CHILD_CHECK(to_requester.put(m.card(mr)) && to_target.get(requester));
    m.connect(requester);
    CHILD_CHECK(to_requester.put('r'));
    CHILD_CHECK(all_landed(buffer.data()));
    CHILD_CHECK(to_requester.put('c'));
    return 0;
  });
  Child requester = spawn([&] {
    Member m(fabric.name(), 0, 256);
    Card target;
    CHILD_CHECK(to_requester.get(target));
    std::vector<uint8_t> source(kWrites * kSlot);
    for (uint32_t i = 0; i < kWrites; ++i) std::memset(&source[i * kSlot], i + 1, kSlot);
    ibv_mr* mr = m.reg(source.data(), source.size());
    CHILD_CHECK(to_target.put(m.card(mr)));
    m.connect(target);
    char ready = 0;
    CHILD_CHECK(to_requester.get(ready) && ready == 'r');
    for (uint32_t i = 0; i < kWrites; ++i) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(&source[i * kSlot]), kSlot, mr->lkey};
      ibv_send_wr wr{};
      wr.wr_id = i;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = target.addr + i * kSlot;
      wr.wr.rdma.rkey = target.rkey;
      ibv_send_wr* bad = nullptr;
      CHILD_CHECK(ibv_post_send(m.qp(), &wr, &bad) == 0);
    }
    char checked = 0;
    CHILD_CHECK(to_requester.get(checked) && checked == 'c');
    // Then every completion is there, in order.
    for (uint32_t i = 0; i < kWrites; ++i) {
      const ibv_wc wc = m.next();
      CHILD_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == i);
    }
    return 0;
  });
  EXPECT_EQ(requester.wait(), 0);
  EXPECT_EQ(target.wait(), 0);
}

}  // namespace
}  // namespace verbfault::sim

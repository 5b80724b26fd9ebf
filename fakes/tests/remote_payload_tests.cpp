// The single-copy data path between processes of a local fabric
// (sim/fabric/shared_memory.h, sim/fabric/remote_payload.h): RDMA WRITE payloads by
// reference to the requester's memory, what falls back to bytes in the
// frame, checks still made at the target, and the life of the mappings.
// Each test runs two members of a fabric of its own in forked children
// that use the simulated provider directly (the test process itself never
// touches the device: a child made after it had would not be a member).
#include "fabric.h"
#include "remote_frames.h"
#include "remote_payload.h"
#include "shared_memory.h"
#include "verbfault/sim/provider.h"
#include "two_members.h"
#include "wire_process.h"

#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace verbfault::sim {
namespace {

using wire::testing::Child;
using wire::testing::ScratchFabric;
using wire::testing::spawn;

void fill(uint8_t* p, std::size_t n, uint8_t seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 9));
}
bool filled(const uint8_t* p, std::size_t n, uint8_t seed) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != static_cast<uint8_t>(seed + i * 7 + (i >> 9))) return false;
  return true;
}

uint8_t* pages(std::size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHILD_CHECK(p != MAP_FAILED);
  return static_cast<uint8_t*>(p);
}

constexpr std::size_t kTarget = 1 << 20;

// The mapping cache's size, read under the lock that guards it.
std::size_t mapped() {
  std::lock_guard guard(process_fabric().mutex);
  return shared_memory::mapped_count();
}

// Two members: `requester` (member 0) runs `body` with the target's card;
// the target (member 1) registers kTarget bytes and waits; then it runs
// `check` on its buffer. Both must exit 0.
template <class Body, class Check>
void two_members(const std::string& name, Body body, Check check) {
  ScratchFabric fabric(name);
  Pipe to_target;
  Pipe to_requester;
  Child target = spawn([&] {
    Member m(fabric.name(), 1);
    uint8_t* buffer = pages(kTarget);
    std::memset(buffer, 0, kTarget);
    ibv_mr* mr = m.reg(buffer, kTarget);
    Card requester;
    CHILD_CHECK(to_requester.put(m.card(mr)) && to_target.get(requester));
    m.connect(requester);
    CHILD_CHECK(to_requester.put('r'));
    char done = 0;
    CHILD_CHECK(to_target.get(done) && done == 'd');
    CHILD_CHECK(check(buffer));
    CHILD_CHECK(to_requester.put('c'));
    return 0;
  });
  Child requester = spawn([&] {
    Member m(fabric.name(), 0);
    Card target;
    CHILD_CHECK(to_requester.get(target));
    CHILD_CHECK(to_target.put(m.card(nullptr)));
    m.connect(target);
    char ready = 0;
    CHILD_CHECK(to_requester.get(ready) && ready == 'r');
    CHILD_CHECK(body(m, target));
    CHILD_CHECK(to_target.put('d'));
    char checked = 0;
    CHILD_CHECK(to_requester.get(checked) && checked == 'c');
    return 0;
  });
  EXPECT_EQ(requester.wait(), 0);
  EXPECT_EQ(target.wait(), 0);
}

TEST(RemotePayload, WriteFromSharedPagesLandsOnce) {
  two_members(
      "write",
      [](Member& m, const Card& target) {
        constexpr std::size_t n = 256 * 1024;
        uint8_t* source = pages(n);
        fill(source, n, 3);
        ibv_mr* mr = m.reg(source, n);
        CHILD_CHECK(shared_memory::segment_count() == 1);
        // One SGE of 200 KiB, then three SGEs (one starting mid-page) in
        // one WR, behind it.
        CHILD_CHECK(m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, 200 * 1024, mr->lkey}}, target.addr,
                          target.rkey) == IBV_WC_SUCCESS);
        std::vector<ibv_sge> sges = {{m.card(mr).addr + 1000, 5000, mr->lkey},
                                     {m.card(mr).addr + 70000, 30000, mr->lkey},
                                     {m.card(mr).addr + 4096, 4096, mr->lkey}};
        CHILD_CHECK(m.run(IBV_WR_RDMA_WRITE, sges, target.addr + 300000, target.rkey) ==
                    IBV_WC_SUCCESS);
        // READ from the target back into the source's last 100 KiB.
        CHILD_CHECK(m.run(IBV_WR_RDMA_READ, {{m.card(mr).addr + 156 * 1024, 100 * 1024, mr->lkey}},
                          target.addr, target.rkey) == IBV_WC_SUCCESS);
        uint8_t expected[100 * 1024];
        fill(expected, sizeof expected, 3);
        return std::memcmp(source + 156 * 1024, expected, sizeof expected) == 0;
      },
      [](const uint8_t* buffer) {
        std::vector<uint8_t> source(256 * 1024);
        fill(source.data(), source.size(), 3);
        const uint8_t* multi = buffer + 300000;
        return std::memcmp(buffer, source.data(), 200 * 1024) == 0 &&
               std::memcmp(multi, source.data() + 1000, 5000) == 0 &&
               std::memcmp(multi + 5000, source.data() + 70000, 30000) == 0 &&
               std::memcmp(multi + 35000, source.data() + 4096, 4096) == 0 && mapped() == 1;
      });
}

TEST(RemotePayload, RegionNotPageAlignedSharesItsWholePages) {
  two_members(
      "unaligned",
      [](Member& m, const Card& target) {
        constexpr std::size_t n = 100 * 1024 + 123;
        uint8_t* block = static_cast<uint8_t*>(std::malloc(n + 4096));
        uint8_t* source = block + 777;
        fill(source, n, 9);
        // The bytes around the region, on its first and last page, stay
        // the program's own.
        block[0] = 0x11;
        ibv_mr* mr = m.reg(source, n);
        CHILD_CHECK(shared_memory::segment_count() == 1);
        CHILD_CHECK(m.run(IBV_WR_RDMA_WRITE,
                          {{m.card(mr).addr, static_cast<uint32_t>(n), mr->lkey}}, target.addr + 5,
                          target.rkey) == IBV_WC_SUCCESS);
        CHILD_CHECK(sim::dereg_mr(mr) == 0);
        CHILD_CHECK(shared_memory::segment_count() == 0);
        const bool ok = filled(source, n, 9) && block[0] == 0x11;
        std::free(block);
        return ok;
      },
      [](const uint8_t* buffer) {
        return buffer[4] == 0 && filled(buffer + 5, 100 * 1024 + 123, 9) &&
               buffer[5 + 100 * 1024 + 123] == 0;
      });
}

TEST(RemotePayload, SmallRegionFallsBackToBytes) {
  two_members(
      "small",
      [](Member& m, const Card& target) {
        constexpr std::size_t n = 8 * 1024;  // below kMinSharedBytes
        uint8_t* source = pages(n);
        fill(source, n, 5);
        ibv_mr* mr = m.reg(source, n);
        CHILD_CHECK(shared_memory::segment_count() == 0);
        return m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, n, mr->lkey}}, target.addr,
                     target.rkey) == IBV_WC_SUCCESS;
      },
      [](const uint8_t* buffer) { return filled(buffer, 8 * 1024, 5) && mapped() == 0; });
}

TEST(RemotePayload, TargetStillChecksRkeyAndBounds) {
  two_members(
      "checks",
      [](Member& m, const Card& target) {
        constexpr std::size_t n = 64 * 1024;
        uint8_t* source = pages(n);
        fill(source, n, 1);
        ibv_mr* mr = m.reg(source, n);
        // Past the end of the target's region: a remote access error, and
        // the target's QP goes to ERR (so one violation per connection).
        return m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, n, mr->lkey}},
                     target.addr + kTarget - 1000, target.rkey) == IBV_WC_REM_ACCESS_ERR;
      },
      [](const uint8_t* buffer) {
        for (std::size_t i = 0; i < kTarget; ++i)
          if (buffer[i] != 0) return false;
        return true;
      });
  two_members(
      "rkey",
      [](Member& m, const Card& target) {
        constexpr std::size_t n = 64 * 1024;
        uint8_t* source = pages(n);
        ibv_mr* mr = m.reg(source, n);
        return m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, n, mr->lkey}}, target.addr,
                     target.rkey + 977) == IBV_WC_REM_ACCESS_ERR;
      },
      [](const uint8_t*) { return true; });
}

// A memory window across processes (sim/objects/memory_window.h): the target
// binds a type 2 window through its QP; the requester writes through the
// window's rkey, invalidates it with SEND_WITH_INV (the rkey travels in the
// request frame), and is refused afterwards.
TEST(RemotePayload, MemoryWindowRkeyResolvedAndInvalidatedAtTheTarget) {
  ScratchFabric fabric("window");
  Pipe to_target;
  Pipe to_requester;
  constexpr std::size_t kOffset = 128;
  Child target = spawn([&] {
    Member m(fabric.name(), 1);
    static uint8_t buffer[4096];
    ibv_mr* mr = sim::reg_mr(m.pd(), buffer, sizeof buffer, reinterpret_cast<uintptr_t>(buffer),
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
    CHILD_CHECK(mr != nullptr);
    Card requester;
    CHILD_CHECK(to_requester.put(m.card(mr)) && to_target.get(requester));
    m.connect(requester);
    ibv_mw* mw = ibv_alloc_mw(m.pd(), IBV_MW_TYPE_2);
    CHILD_CHECK(mw != nullptr);
    ibv_send_wr bind{};
    bind.opcode = IBV_WR_BIND_MW;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_mw.mw = mw;
    bind.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    bind.bind_mw.bind_info = {mr, reinterpret_cast<uintptr_t>(buffer + kOffset), 256,
                              IBV_ACCESS_REMOTE_WRITE};
    ibv_send_wr* bad = nullptr;
    CHILD_CHECK(ibv_post_send(m.qp(), &bind, &bad) == 0);
    const ibv_wc bound = m.next();
    CHILD_CHECK(bound.status == IBV_WC_SUCCESS && bound.opcode == IBV_WC_BIND_MW);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer + 2048), 64, mr->lkey};
    ibv_recv_wr recv{};
    recv.wr_id = 7;
    recv.sg_list = &sge;
    recv.num_sge = 1;
    ibv_recv_wr* bad_recv = nullptr;
    CHILD_CHECK(ibv_post_recv(m.qp(), &recv, &bad_recv) == 0);
    Card window = m.card(mr);
    window.addr = reinterpret_cast<uintptr_t>(buffer + kOffset);
    window.rkey = bind.bind_mw.rkey;
    CHILD_CHECK(to_requester.put(window));
    const ibv_wc received = m.next();
    CHILD_CHECK(received.status == IBV_WC_SUCCESS && received.wr_id == 7);
    CHILD_CHECK((received.wc_flags & IBV_WC_WITH_INV) &&
                received.invalidated_rkey == bind.bind_mw.rkey);
    CHILD_CHECK(filled(buffer + kOffset, 32, 9));
    char done = 0;
    CHILD_CHECK(to_target.get(done) && done == 'd');
    CHILD_CHECK(buffer[kOffset + 32] == 0);  // the write after the invalidation did not land
    return 0;
  });
  Child requester = spawn([&] {
    Member m(fabric.name(), 0);
    Card target;
    CHILD_CHECK(to_requester.get(target));
    CHILD_CHECK(to_target.put(m.card(nullptr)));
    m.connect(target);
    Card window;
    CHILD_CHECK(to_requester.get(window));
    static uint8_t source[64];
    fill(source, sizeof source, 9);
    ibv_mr* mr = m.reg(source, sizeof source);
    CHILD_CHECK(m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, 32, mr->lkey}}, window.addr,
                      window.rkey) == IBV_WC_SUCCESS);
    ibv_send_wr inv{};
    inv.opcode = IBV_WR_SEND_WITH_INV;
    inv.send_flags = IBV_SEND_SIGNALED;
    inv.invalidate_rkey = window.rkey;
    ibv_send_wr* bad = nullptr;
    CHILD_CHECK(ibv_post_send(m.qp(), &inv, &bad) == 0);
    CHILD_CHECK(m.next().status == IBV_WC_SUCCESS);
    CHILD_CHECK(m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, 32, mr->lkey}}, window.addr + 32,
                      window.rkey) == IBV_WC_REM_ACCESS_ERR);
    CHILD_CHECK(to_target.put('d'));
    return 0;
  });
  EXPECT_EQ(requester.wait(), 0);
  EXPECT_EQ(target.wait(), 0);
}

// The requester deregisters (its pages go back to private memory, the
// memfd's descriptor closes) while the target still maps the segment; a
// new region is shared afresh and written through.
TEST(RemotePayload, OwnerDeregistersWhilePeerMapsIt) {
  two_members(
      "dereg",
      [](Member& m, const Card& target) {
        constexpr std::size_t n = 64 * 1024;
        uint8_t* source = pages(n);
        fill(source, n, 21);
        ibv_mr* mr = m.reg(source, n);
        CHILD_CHECK(m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, n, mr->lkey}}, target.addr,
                          target.rkey) == IBV_WC_SUCCESS);
        CHILD_CHECK(sim::dereg_mr(mr) == 0);
        CHILD_CHECK(filled(source, n, 21));
        munmap(source, n);
        uint8_t* again = pages(n);
        fill(again, n, 22);
        ibv_mr* second = m.reg(again, n);
        return m.run(IBV_WR_RDMA_WRITE, {{m.card(second).addr, n, second->lkey}}, target.addr + n,
                     target.rkey) == IBV_WC_SUCCESS;
      },
      [](const uint8_t* buffer) {
        return filled(buffer, 64 * 1024, 21) && filled(buffer + 64 * 1024, 64 * 1024, 22) &&
               mapped() == 2;
      });
}

// A member that is gone: the other unmaps its segments.
TEST(RemotePayload, PeerGoneUnmapsItsSegments) {
  ScratchFabric fabric("gone");
  Pipe to_target;
  Pipe to_requester;
  Child target = spawn([&] {
    Member m(fabric.name(), 1);
    uint8_t* buffer = pages(kTarget);
    ibv_mr* mr = m.reg(buffer, kTarget);
    Card requester;
    CHILD_CHECK(to_requester.put(m.card(mr)) && to_target.get(requester));
    m.connect(requester);
    CHILD_CHECK(to_requester.put('r'));
    char done = 0;
    CHILD_CHECK(to_target.get(done) && done == 'd');
    CHILD_CHECK(mapped() == 1);
    CHILD_CHECK(to_requester.put('c'));  // the requester exits then
    CHILD_CHECK(wire::testing::eventually([] { return mapped() == 0; }));
    return 0;
  });
  Child requester = spawn([&] {
    Member m(fabric.name(), 0);
    Card target;
    CHILD_CHECK(to_requester.get(target));
    CHILD_CHECK(to_target.put(m.card(nullptr)));
    m.connect(target);
    char ready = 0;
    CHILD_CHECK(to_requester.get(ready) && ready == 'r');
    uint8_t* source = pages(64 * 1024);
    ibv_mr* mr = m.reg(source, 64 * 1024);
    CHILD_CHECK(m.run(IBV_WR_RDMA_WRITE, {{m.card(mr).addr, 64 * 1024, mr->lkey}}, target.addr,
                      target.rkey) == IBV_WC_SUCCESS);
    CHILD_CHECK(to_target.put('d'));
    char checked = 0;
    CHILD_CHECK(to_requester.get(checked) && checked == 'c');
    return 0;
  });
  EXPECT_EQ(requester.wait(), 0);
  EXPECT_EQ(target.wait(), 0);
}

// fork(2) after registering: the child gets its own copy of the pages
// (as of pinned pages), not the parent's shared ones.
TEST(RemotePayload, ForkedChildGetsPrivatePages) {
  ScratchFabric fabric("fork");
  Child member = spawn([&] {
    Member m(fabric.name(), 0);
    constexpr std::size_t n = 64 * 1024;
    uint8_t* source = pages(n);
    std::memset(source, 1, n);
    m.reg(source, n);
    CHILD_CHECK(shared_memory::segment_count() == 1);
    Child grandchild = spawn([&] {
      CHILD_CHECK(shared_memory::segment_count() == 0 && source[100] == 1);
      std::memset(source, 2, n);
      return 0;
    });
    CHILD_CHECK(grandchild.wait() == 0);
    CHILD_CHECK(source[100] == 1 && source[n - 1] == 1);
    return 0;
  });
  EXPECT_EQ(member.wait(), 0);
}

// A description the target cannot map (no such segment) is "unresolved":
// the target answers nothing and the requester sends bytes next time.
TEST(RemotePayload, UnmappableReferenceIsUnresolved) {
  struct Frame {
    remote::RequestFrame request;
    remote_payload::DescribedPayload described;
    remote_payload::PieceEntry entry;
  } frame{};
  frame.request.payload_format = remote::PayloadFormat::kDescribed;
  frame.request.length = 4096;
  frame.described.pid = getpid();
  frame.described.pieces = 1;
  frame.entry = remote_payload::PieceEntry{4096, 12345, 0, 0, 0};
  const auto* bytes = reinterpret_cast<const uint8_t*>(&frame);
  const std::span<const uint8_t> rest(bytes + sizeof frame.request,
                                      sizeof frame - sizeof frame.request);
  ASSERT_TRUE(remote_payload::fits(frame.request, rest.size()));
  remote_payload::Incoming incoming;
  EXPECT_EQ(incoming.decode(3, frame.request, rest), remote_payload::Incoming::Status::kUnresolved);
  // A length that does not add up is malformed.
  frame.request.length = 4000;
  remote_payload::Incoming wrong;
  EXPECT_EQ(wrong.decode(3, frame.request, rest), remote_payload::Incoming::Status::kMalformed);
  shared_memory::forget(3);
}

}  // namespace
}  // namespace verbfault::sim

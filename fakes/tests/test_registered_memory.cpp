// ibv_reg_mr(3) pins memory that is there: the simulated device refuses
// what the kernel's ib_umem_get refuses (unmapped memory and memory a
// writable region may not write: EFAULT; a range that wraps: EINVAL), and
// never faults on memory it validated if the application unmaps or
// protects it afterwards: the access ends in a protection error
// (docs/device.md, "Error model").
#include "verbs_fixture.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace verbfault::testing {
namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

std::size_t page() {
  return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// `pages` pages of anonymous memory with protection `prot`.
uint8_t* map_pages(std::size_t pages, int prot = PROT_READ | PROT_WRITE) {
  void* map = mmap(nullptr, pages * page(), prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(map, MAP_FAILED);
  return static_cast<uint8_t*>(map);
}

// `pages` pages far below where mmap(2) places memory of its own choice
// (top-down from below the stack), so that a hole made in them stays a
// hole: a one-page mapping of the allocator's (AddressSanitizer's, reading
// /proc/self/maps) filled a hole in pages placed by the kernel. 256 MiB
// and up is free in every build here (ASan's and TSan's low application
// memory included); the kernel's choice when none is.
uint8_t* map_low_pages(std::size_t pages) {
  for (std::uintptr_t at = std::uintptr_t{1} << 28; at < std::uintptr_t{1} << 31; at += 1 << 28) {
    void* map = mmap(reinterpret_cast<void*>(at), pages * page(), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (map == reinterpret_cast<void*>(at)) return static_cast<uint8_t*>(map);
    if (map != MAP_FAILED) munmap(map, pages * page());  // a kernel without NOREPLACE
  }
  return map_pages(pages);
}

using RegisteredMemory = SimDevice;

TEST_F(RegisteredMemory, UnmappedMemoryIsEfault) {
  // A page below vm.mmap_min_addr (65536 by default; never 0 here, or NULL
  // would be mappable) that nothing can map. Not a page this test maps and
  // unmaps: the allocator may map memory into that hole before the device
  // reads /proc/self/maps (ThreadSanitizer's allocator did, in CI).
  uint8_t* gone = reinterpret_cast<uint8_t*>(std::uintptr_t{2} * page());
  ASSERT_EQ(msync(gone, page(), MS_ASYNC), -1);  // really unmapped: ENOMEM
  ASSERT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, gone, 64, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, gone, 64, IBV_ACCESS_REMOTE_READ), nullptr);
  EXPECT_EQ(errno, EFAULT);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova2(pd_, gone, 64, 0x1000, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
}

TEST_F(RegisteredMemory, ARangeWithAHoleIsEfault) {
  uint8_t* three = map_low_pages(3);
  ASSERT_EQ(munmap(three + page(), page()), 0);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, three, 3 * page(), IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  // Each mapped page on its own is fine.
  ibv_mr* first = ibv_reg_mr(pd_, three, page(), IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* last = ibv_reg_mr(pd_, three + 2 * page(), page(), IBV_ACCESS_LOCAL_WRITE);
  EXPECT_NE(first, nullptr);
  EXPECT_NE(last, nullptr);
  if (first) {
    EXPECT_EQ(ibv_dereg_mr(first), 0);
  }
  if (last) {
    EXPECT_EQ(ibv_dereg_mr(last), 0);
  }
  munmap(three, page());
  munmap(three + 2 * page(), page());
}

TEST_F(RegisteredMemory, LengthsThatWrapOrCoverEverythingAreEinval) {
  static uint8_t buf[256];
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, buf, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  const std::size_t to_the_end = UINTPTR_MAX - addr_of(buf) + 1;  // addr + length wraps to 0
  EXPECT_EQ(ibv_reg_mr(pd_, buf, to_the_end + 16, IBV_ACCESS_REMOTE_READ), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

// ib_umem_get pins with FOLL_WRITE when the region may be written (local
// write, remote write, remote atomic, MW bind): read-only memory is EFAULT
// then, and fine for a region that is only read.
TEST_F(RegisteredMemory, WritableAccessToReadOnlyMemoryIsEfault) {
  uint8_t* read_only = map_pages(1, PROT_READ);
  for (int access : {int{IBV_ACCESS_LOCAL_WRITE}, kAllAccess,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, int{IBV_ACCESS_MW_BIND}}) {
    errno = 0;
    EXPECT_EQ(ibv_reg_mr(pd_, read_only, 64, access), nullptr) << access;
    EXPECT_EQ(errno, EFAULT) << access;
  }
  ibv_mr* mr = ibv_reg_mr(pd_, read_only, 64, IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  munmap(read_only, page());
}

TEST_F(RegisteredMemory, InaccessibleMemoryIsEfault) {
  uint8_t* none = map_pages(1, PROT_NONE);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, none, 64, IBV_ACCESS_REMOTE_READ), nullptr);
  EXPECT_EQ(errno, EFAULT);
  munmap(none, page());
}

// ibv_rereg_mr(3): the new translation is checked as a registration;
// IBV_REREG_MR_ERR_CMD with the kernel's errno, and the region stays valid
// where it was.
TEST_F(RegisteredMemory, ReregToUnmappedMemoryFailsAndLeavesTheRegion) {
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  uint8_t* gone = map_pages(1);
  ASSERT_EQ(munmap(gone, page()), 0);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, gone, 64, 0),
            IBV_REREG_MR_ERR_CMD);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(mr->addr, buf);
  uint8_t* read_only = map_pages(1, PROT_READ);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, read_only, 64, 0),
            IBV_REREG_MR_ERR_CMD);
  EXPECT_EQ(errno, EFAULT);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf, SIZE_MAX, 0),
            IBV_REREG_MR_ERR_CMD);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mr->addr, buf);
  EXPECT_EQ(mr->length, sizeof buf);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  munmap(read_only, page());
}

// Memory the application unmaps or protects after registering it: a real
// HCA still reaches the pinned pages; the simulated device cannot, and
// ends the access in a protection error instead of faulting.
class VanishedMemory : public RcPair {
 protected:
  void SetUp() override {
    RcPair::SetUp();
    if (HasFatalFailure()) return;
    pages_ = map_pages(1);
    mr_ = reg(pages_, page());
    ASSERT_NE(mr_, nullptr);
  }
  void TearDown() override {
    if (mr_ != nullptr) ibv_dereg_mr(mr_);
    munmap(pages_, page());
    RcPair::TearDown();
  }
  ibv_wc_status completion_of(ibv_cq* cq) {
    auto wc = poll(cq, 1);
    if (wc.size() != 1) {
      ADD_FAILURE() << "no completion";
      return IBV_WC_GENERAL_ERR;
    }
    return wc[0].status;
  }
  uint8_t* pages_ = nullptr;
  ibv_mr* mr_ = nullptr;  // b_'s side, over pages_
};

TEST_F(VanishedMemory, RdmaWriteIntoUnmappedMemoryIsARemoteAccessError) {
  ASSERT_EQ(munmap(pages_, page()), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 1, mr_a_, buf_a_, 64, IBV_SEND_SIGNALED,
                      addr_of(pages_), mr_->rkey),
            0);
  EXPECT_EQ(completion_of(cq_a_), IBV_WC_REM_ACCESS_ERR);
  // IBA 11.6.3.1: the responder's QP goes to ERR as for a bad R_Key.
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
}

TEST_F(VanishedMemory, RdmaWriteIntoMemoryMadeReadOnlyIsARemoteAccessError) {
  ASSERT_EQ(mprotect(pages_, page(), PROT_READ), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_WRITE, 1, mr_a_, buf_a_, 64, IBV_SEND_SIGNALED,
                      addr_of(pages_), mr_->rkey),
            0);
  EXPECT_EQ(completion_of(cq_a_), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(VanishedMemory, RdmaReadOfUnmappedMemoryIsARemoteAccessError) {
  ASSERT_EQ(munmap(pages_, page()), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_RDMA_READ, 1, mr_a_, buf_a_, 64, IBV_SEND_SIGNALED,
                      addr_of(pages_), mr_->rkey),
            0);
  EXPECT_EQ(completion_of(cq_a_), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(VanishedMemory, AtomicOnUnmappedMemoryIsARemoteAccessError) {
  ASSERT_EQ(munmap(pages_, page()), 0);
  ibv_sge sge{addr_of(buf_a_), 8, mr_a_->lkey};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = addr_of(pages_);
  wr.wr.atomic.rkey = mr_->rkey;
  wr.wr.atomic.compare_add = 1;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  EXPECT_EQ(completion_of(cq_a_), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(VanishedMemory, ReceiveIntoUnmappedMemoryFailsBothSides) {
  ibv_sge sge{addr_of(pages_), 64, mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = 2;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &wr, &bad), 0);
  ASSERT_EQ(munmap(pages_, page()), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 1, mr_a_, buf_a_, 64), 0);
  // As a receive into a bad lkey: a local protection error on the
  // receive, a remote operation error on the send.
  EXPECT_EQ(completion_of(cq_b_), IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(completion_of(cq_a_), IBV_WC_REM_OP_ERR);
}

TEST_F(VanishedMemory, SendFromUnmappedMemoryIsALocalProtectionError) {
  ibv_mr* source = ibv_reg_mr(pd_, pages_, page(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(source, nullptr);
  ASSERT_EQ(post_recv(b_, 2, mr_b_, buf_b_, 64), 0);
  ASSERT_EQ(munmap(pages_, page()), 0);
  ASSERT_EQ(post_send(a_, IBV_WR_SEND, 1, source, pages_, 64), 0);
  EXPECT_EQ(completion_of(cq_a_), IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(ibv_dereg_mr(source), 0);
}

}  // namespace
}  // namespace verbfault::testing

// Protection domains, memory regions and address handles of the simulated
// device: ibv_alloc_pd(3), ibv_reg_mr(3), ibv_rereg_mr(3), ibv_create_ah(3).
#include "verbs_fixture.h"

#include <algorithm>
#include <cerrno>

namespace verbfault::testing {
namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// ---- PD ---------------------------------------------------------------------

using Pd = SimDevice;

TEST_F(Pd, AllocAndDealloc) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  EXPECT_NE(pd, pd_);
  EXPECT_EQ(pd->context, ctx_);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

TEST_F(Pd, DeallocWithLiveMrIsBusyUntilDereg) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

TEST_F(Pd, DeallocWithLiveQpIsBusyUntilDestroyQp) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(Pd, DeallocWithLiveAhIsBusyUntilDestroyAh) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  ibv_ah_attr attr = address();
  ibv_ah* ah = ibv_create_ah(pd, &attr);
  ASSERT_NE(ah, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

TEST_F(Pd, DeallocWithLiveSrqIsBusyUntilDestroySrq) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  ibv_srq_init_attr init{};
  init.attr.max_wr = 8;
  init.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd, &init);
  ASSERT_NE(srq, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// ---- MR ---------------------------------------------------------------------

using Mr = SimDevice;

TEST_F(Mr, RegisteredRegionDescribesItself) {
  alignas(64) static uint8_t buf[1024];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, kAllAccess);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->addr, buf);
  EXPECT_EQ(mr->length, sizeof buf);
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(mr->context, ctx_);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Mr, KeysAreNonZeroAndDistinctPerRegion) {
  alignas(64) static uint8_t buf[4096];
  ibv_mr* mrs[3];
  for (auto& mr : mrs) {
    // The same memory may be registered more than once: each registration
    // is its own region with its own keys.
    mr = ibv_reg_mr(pd_, buf, sizeof buf, kAllAccess);
    ASSERT_NE(mr, nullptr);
    EXPECT_NE(mr->lkey, 0u);
    EXPECT_NE(mr->rkey, 0u);
  }
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j) {
      EXPECT_NE(mrs[i]->lkey, mrs[j]->lkey);
      EXPECT_NE(mrs[i]->rkey, mrs[j]->rkey);
    }
  for (auto* mr : mrs) EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Mr, RemoteWriteWithoutLocalWriteIsEinval) {
  static uint8_t buf[256];
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(Mr, RemoteAtomicWithoutLocalWriteIsEinval) {
  static uint8_t buf[256];
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
}

// As the kernel's ib_umem_get: a region of no bytes is EINVAL, memory that
// cannot be pinned (NULL) EFAULT.
TEST_F(Mr, ZeroLengthIsEinvalAndANullAddressEfault) {
  static uint8_t buf[256];
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, buf, 0, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, nullptr, 0, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, nullptr, sizeof buf, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
}

TEST_F(Mr, RemoteReadAloneNeedsNoLocalWrite) {
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Mr, MwBindAccessIsAccepted) {
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  ASSERT_NE(mr, nullptr) << "ibv_reg_mr(3): IBV_ACCESS_MW_BIND (memory windows are simulated)";
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Mr, DmabufRegistrationIsNotSupported) {
  errno = 0;
  EXPECT_EQ(ibv_reg_dmabuf_mr(pd_, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

// MR semantics seen from a remote RDMA WRITE: a_ writes into b_'s memory.
class MrRemote : public RcPair {
 protected:
  // An 8-byte signaled RDMA WRITE of buf_a_ to (remote_addr, rkey); returns
  // the status of its completion.
  ibv_wc_status write_to(uint64_t remote_addr, uint32_t rkey) {
    if (post_send(a_, IBV_WR_RDMA_WRITE, 1, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED, remote_addr,
                  rkey) != 0) {
      ADD_FAILURE() << "ibv_post_send failed";
      return IBV_WC_GENERAL_ERR;
    }
    auto wc = poll(cq_a_, 1);
    if (wc.size() != 1) {
      ADD_FAILURE() << "no completion";
      return IBV_WC_GENERAL_ERR;
    }
    return wc[0].status;
  }
  static uint64_t addr_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }
};

TEST_F(MrRemote, RegMrIova2AddressesTheRegionByIova) {
  constexpr uint64_t kIova = 0x7000'0000;
  ibv_mr* mr = ibv_reg_mr_iova2(pd_, buf_b_, sizeof buf_b_, kIova, kAllAccess);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->addr, buf_b_);
  EXPECT_EQ(mr->length, sizeof buf_b_);
  std::memcpy(buf_a_, "iova-ok", 8);
  EXPECT_EQ(write_to(kIova + 100, mr->rkey), IBV_WC_SUCCESS);
  EXPECT_STREQ(reinterpret_cast<char*>(buf_b_ + 100), "iova-ok");
}

TEST_F(MrRemote, RegMrIova2OutsideTheIovaRangeIsARemoteAccessError) {
  constexpr uint64_t kIova = 0x7000'0000;
  ibv_mr* mr = ibv_reg_mr_iova2(pd_, buf_b_, sizeof buf_b_, kIova, kAllAccess);
  ASSERT_NE(mr, nullptr);
  // The host address is not in the region's iova space.
  EXPECT_EQ(write_to(addr_of(buf_b_), mr->rkey), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(MrRemote, RegMrIovaAddressesTheRegionByIova) {
  constexpr uint64_t kIova = 0x1000;
  ibv_mr* mr = ibv_reg_mr_iova(pd_, buf_b_, sizeof buf_b_, kIova, kAllAccess);
  ASSERT_NE(mr, nullptr);
  std::memcpy(buf_a_, "iova-1", 7);
  EXPECT_EQ(write_to(kIova + 8, mr->rkey), IBV_WC_SUCCESS);
  EXPECT_STREQ(reinterpret_cast<char*>(buf_b_ + 8), "iova-1");
}

TEST_F(MrRemote, ReregChangeAccessCanRevokeRemoteWrite) {
  ASSERT_EQ(
      ibv_rereg_mr(mr_b_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE),
      0);
  EXPECT_EQ(write_to(addr_of(buf_b_), mr_b_->rkey), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(MrRemote, ReregChangeAccessCanGrantRemoteWrite) {
  alignas(64) static uint8_t target[64];
  ibv_mr* mr = ibv_reg_mr(pd_, target, sizeof target, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, kAllAccess), 0);
  std::memcpy(buf_a_, "granted", 8);
  EXPECT_EQ(write_to(addr_of(target), mr->rkey), IBV_WC_SUCCESS);
  EXPECT_STREQ(reinterpret_cast<char*>(target), "granted");
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(MrRemote, ReregChangeTranslationMovesTheRegion) {
  alignas(64) static uint8_t other[1024];
  ASSERT_EQ(ibv_rereg_mr(mr_b_, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, other, sizeof other, 0),
            0);
  EXPECT_EQ(mr_b_->addr, other);
  EXPECT_EQ(mr_b_->length, sizeof other);
  std::memcpy(buf_a_, "moved", 6);
  EXPECT_EQ(write_to(addr_of(other + 16), mr_b_->rkey), IBV_WC_SUCCESS);
  EXPECT_STREQ(reinterpret_cast<char*>(other + 16), "moved");
}

TEST_F(MrRemote, DeregInvalidatesTheRkey) {
  const uint32_t rkey = mr_b_->rkey;
  ASSERT_EQ(ibv_dereg_mr(mr_b_), 0);
  mr_b_ = nullptr;
  EXPECT_EQ(write_to(addr_of(buf_b_), rkey), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(Mr, ReregChangePdMovesTheRegionBetweenPds) {
  ibv_pd* from = ibv_alloc_pd(ctx_);
  ibv_pd* to = ibv_alloc_pd(ctx_);
  ASSERT_NE(from, nullptr);
  ASSERT_NE(to, nullptr);
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(from, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, to, nullptr, 0, 0), 0);
  EXPECT_EQ(mr->pd, to);
  EXPECT_EQ(ibv_dealloc_pd(to), EBUSY);
  EXPECT_EQ(ibv_dealloc_pd(from), 0);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(to), 0);
}

TEST_F(Mr, ReregChangePdToAnotherContextsPdFails) {
  ibv_context* other = ibv_open_device(device_);
  ASSERT_NE(other, nullptr);
  ibv_pd* foreign = ibv_alloc_pd(other);
  ASSERT_NE(foreign, nullptr);
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  errno = 0;
  EXPECT_NE(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, foreign, nullptr, 0, 0), 0);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(ibv_dealloc_pd(foreign), 0) << "the MR never moved into it";
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_close_device(other), 0);
}

TEST_F(Mr, ReregInputErrorsLeaveTheRegionValid) {
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, 1 << 6, nullptr, nullptr, 0, 0), IBV_REREG_MR_ERR_INPUT)
      << "unknown flag";
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, nullptr, 64, 0),
            IBV_REREG_MR_ERR_INPUT)
      << "new translation without an address";
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf, 0, 0),
            IBV_REREG_MR_ERR_INPUT)
      << "new translation of length 0";
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd_, nullptr, 0, IBV_ACCESS_LOCAL_WRITE),
            IBV_REREG_MR_ERR_INPUT)
      << "access flags without IBV_REREG_MR_CHANGE_ACCESS";
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mr->addr, buf);
  EXPECT_EQ(mr->length, sizeof buf);
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Mr, ReregWithoutFlagsFails) {
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  errno = 0;
  EXPECT_NE(ibv_rereg_mr(mr, 0, nullptr, nullptr, 0, 0), 0);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);  // ibv_rereg_mr(3): dereg even after a failure
}

TEST_F(Mr, ReregRemoteWriteWithoutLocalWriteFails) {
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  errno = 0;
  EXPECT_NE(
      ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_REMOTE_WRITE),
      0);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

// ---- AH ---------------------------------------------------------------------

using Ah = SimDevice;

TEST_F(Ah, CreateAndDestroy) {
  ibv_ah_attr attr = address();
  attr.sl = 0;
  ibv_ah* ah = ibv_create_ah(pd_, &attr);
  ASSERT_NE(ah, nullptr);
  EXPECT_EQ(ah->pd, pd_);
  EXPECT_EQ(ah->context, ctx_);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(Ah, CreateWithInvalidPortIsEinval) {
  for (uint8_t port : {0, 2}) {
    ibv_ah_attr attr = address();
    attr.port_num = port;
    errno = 0;
    EXPECT_EQ(ibv_create_ah(pd_, &attr), nullptr) << "port " << int{port};
    EXPECT_EQ(errno, EINVAL) << "port " << int{port};
  }
}

TEST_F(Ah, GlobalWithOutOfRangeSgidIndexIsEinval) {
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  ibv_ah_attr attr{};
  attr.dlid = lid();
  attr.port_num = 1;
  attr.is_global = 1;
  attr.grh.hop_limit = 1;
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &attr.grh.dgid), 0);
  attr.grh.sgid_index = static_cast<uint8_t>(std::min(port.gid_tbl_len, 255));
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
}  // namespace verbfault::testing

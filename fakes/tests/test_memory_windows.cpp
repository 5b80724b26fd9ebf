// Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3), ibv_post_send(3)
// IBV_WR_BIND_MW / LOCAL_INV / SEND_WITH_INV, ibv_wr_post(3); IBA 10.6.7):
// QP a is the requester, QP b owns the memory (buf_b_) and binds windows on
// it; a reaches the memory only through the window's rkey.
#include "verbs_fixture.h"

#include <cerrno>
#include <cstring>
#include <vector>

namespace verbfault::testing {
namespace {

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

constexpr unsigned kRemote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
constexpr size_t kWindowStart = 256;  // the window: buf_b_[256, 768)
constexpr size_t kWindowLength = 512;

class Mw : public RcPair {
 protected:
  void SetUp() override {
    RcPair::SetUp();
    if (HasFatalFailure()) return;
    // A second registration of b's buffer that windows may be bound to.
    bindable_ = ibv_reg_mr(pd_, buf_b_, sizeof buf_b_,
                           IBV_ACCESS_LOCAL_WRITE | kRemote | IBV_ACCESS_MW_BIND);
    ASSERT_NE(bindable_, nullptr);
  }

  uint64_t window_addr(size_t offset = 0) const { return addr_of(buf_b_ + kWindowStart + offset); }

  // The one completion `cq` has for the last operation.
  ibv_wc one(ibv_cq* cq) {
    std::vector<ibv_wc> wcs = poll(cq, 1);
    EXPECT_EQ(wcs.size(), 1u);
    if (wcs.empty()) return ibv_wc{};
    return wcs[0];
  }

  // ibv_bind_mw of a type 1 window on b: the completion's status.
  ibv_wc_status bind1(ibv_mw* mw, ibv_mr* mr, uint64_t addr, uint64_t length, unsigned access) {
    ibv_mw_bind bind{};
    bind.wr_id = 71;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info = {mr, addr, length, access};
    EXPECT_EQ(ibv_bind_mw(b_, mw, &bind), 0);
    const ibv_wc wc = one(cq_b_);
    EXPECT_EQ(wc.wr_id, 71u);
    if (wc.status == IBV_WC_SUCCESS) {
      EXPECT_EQ(wc.opcode, IBV_WC_BIND_MW);
    }
    return wc.status;
  }

  // IBV_WR_BIND_MW of a type 2 window on `qp`, with `rkey` the new key.
  ibv_wc_status bind2(ibv_qp* qp, ibv_cq* cq, ibv_mw* mw, uint32_t rkey, ibv_mr* mr, uint64_t addr,
                      uint64_t length, unsigned access = kRemote) {
    ibv_send_wr wr{};
    wr.wr_id = 72;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = rkey;
    wr.bind_mw.bind_info = {mr, addr, length, access};
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(qp, &wr, &bad), 0);
    const ibv_wc wc = one(cq);
    EXPECT_EQ(wc.wr_id, 72u);
    if (wc.status == IBV_WC_SUCCESS) {
      EXPECT_EQ(wc.opcode, IBV_WC_BIND_MW);
    }
    return wc.status;
  }

  // An RDMA WRITE or READ of `length` bytes of buf_a_[0..] from a, through
  // `rkey` at `remote`: the completion's status.
  ibv_wc_status rdma(ibv_wr_opcode opcode, uint32_t rkey, uint64_t remote, uint32_t length) {
    EXPECT_EQ(post_send(a_, opcode, 9, mr_a_, buf_a_, length, IBV_SEND_SIGNALED, remote, rkey), 0);
    return one(cq_a_).status;
  }

  ibv_mr* bindable_ = nullptr;
};

TEST_F(Mw, AllocationChecksTheTypeAndTheDeviceAdvertisesWindows) {
  errno = 0;
  EXPECT_EQ(ibv_alloc_mw(pd_, static_cast<ibv_mw_type>(3)), nullptr);
  EXPECT_EQ(errno, EINVAL) << "ibv_alloc_mw(3): types 1 and 2 only";
  ibv_device_attr attr{};
  ASSERT_EQ(ibv_query_device(ctx_, &attr), 0);
  EXPECT_GT(attr.max_mw, 0);
  EXPECT_TRUE(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
  EXPECT_TRUE(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
  ibv_mw* one = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ibv_mw* two = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(one->type, IBV_MW_TYPE_1);
  EXPECT_EQ(two->type, IBV_MW_TYPE_2);
  EXPECT_EQ(one->pd, pd_);
  EXPECT_NE(one->rkey, two->rkey);
  EXPECT_EQ(ibv_dealloc_pd(pd_), EBUSY) << "a window lives in its PD";
  EXPECT_EQ(ibv_dealloc_mw(one), 0);
  EXPECT_EQ(ibv_dealloc_mw(two), 0);
}

TEST_F(Mw, Type1WriteAndReadGoThroughTheWindowAndNoFurther) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  const uint32_t before = mw->rkey;
  ASSERT_EQ(bind1(mw, bindable_, window_addr(), kWindowLength, kRemote), IBV_WC_SUCCESS);
  EXPECT_EQ(mw->rkey, ibv_inc_rkey(before)) << "ibv_bind_mw(3): the new rkey in mw->rkey";

  for (int i = 0; i < 64; ++i) buf_a_[i] = static_cast<uint8_t>(0x40 + i);
  ASSERT_EQ(rdma(IBV_WR_RDMA_WRITE, mw->rkey, window_addr(8), 64), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(buf_b_ + kWindowStart + 8, buf_a_, 64), 0);

  std::memset(buf_a_, 0, 64);
  for (int i = 0; i < 32; ++i)
    buf_b_[kWindowStart + kWindowLength - 32 + i] = static_cast<uint8_t>(i);
  ASSERT_EQ(rdma(IBV_WR_RDMA_READ, mw->rkey, window_addr(kWindowLength - 32), 32), IBV_WC_SUCCESS);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(buf_a_[i], i);

  // One byte past the window, inside the region: a remote access error.
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, mw->rkey, window_addr(kWindowLength - 31), 32),
            IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(buf_b_[kWindowStart + kWindowLength], 0) << "nothing written past the window";
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR) << "the responder's QP: access violation";
  ibv_async_event event{};
  ASSERT_EQ(ibv_get_async_event(ctx_, &event), 0);
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_ACCESS_ERR);
  EXPECT_EQ(event.element.qp, b_);
  ibv_ack_async_event(&event);
  EXPECT_EQ(ibv_dealloc_mw(mw), 0);
}

TEST_F(Mw, Type1AccessRightsAreTheWindowsNotTheRegions) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  ASSERT_EQ(bind1(mw, bindable_, window_addr(), kWindowLength, IBV_ACCESS_REMOTE_READ),
            IBV_WC_SUCCESS);
  EXPECT_EQ(rdma(IBV_WR_RDMA_READ, mw->rkey, window_addr(), 16), IBV_WC_SUCCESS);
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, mw->rkey, window_addr(), 16), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(Mw, Type1ZeroLengthBindUnbindsAndRetiresTheKey) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  ASSERT_EQ(bind1(mw, bindable_, window_addr(), kWindowLength, kRemote), IBV_WC_SUCCESS);
  const uint32_t bound = mw->rkey;
  ASSERT_EQ(rdma(IBV_WR_RDMA_WRITE, bound, window_addr(), 16), IBV_WC_SUCCESS);
  ASSERT_EQ(bind1(mw, bindable_, window_addr(), 0, 0), IBV_WC_SUCCESS);
  EXPECT_EQ(mw->rkey, ibv_inc_rkey(bound));
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, mw->rkey, window_addr(), 16), IBV_WC_REM_ACCESS_ERR)
      << "an unbound window grants nothing";
}

TEST_F(Mw, Type1StaleKeyOfAnEarlierBindingFails) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  ASSERT_EQ(bind1(mw, bindable_, window_addr(), kWindowLength, kRemote), IBV_WC_SUCCESS);
  const uint32_t first = mw->rkey;
  ASSERT_EQ(bind1(mw, bindable_, window_addr(), kWindowLength, kRemote), IBV_WC_SUCCESS);
  EXPECT_NE(mw->rkey, first);
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, mw->rkey, window_addr(), 16), IBV_WC_SUCCESS);
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, first, window_addr(), 16), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(Mw, Type2BindThroughPostSendThenWriteAndRead) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  ASSERT_EQ(bind2(b_, cq_b_, mw, rkey, bindable_, window_addr(), kWindowLength), IBV_WC_SUCCESS);
  for (int i = 0; i < 32; ++i) buf_a_[i] = static_cast<uint8_t>(0x80 + i);
  ASSERT_EQ(rdma(IBV_WR_RDMA_WRITE, rkey, window_addr(100), 32), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(buf_b_ + kWindowStart + 100, buf_a_, 32), 0);
  std::memset(buf_a_, 0, 32);
  ASSERT_EQ(rdma(IBV_WR_RDMA_READ, rkey, window_addr(100), 32), IBV_WC_SUCCESS);
  EXPECT_EQ(buf_a_[31], 0x80 + 31);
  // A type 2 window cannot be bound again before it is invalidated
  // (IBA o10-37.2.30).
  EXPECT_EQ(bind2(b_, cq_b_, mw, ibv_inc_rkey(rkey), bindable_, window_addr(), 64),
            IBV_WC_MW_BIND_ERR);
}

TEST_F(Mw, Type2ZeroBasedWindowTakesOffsets) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  ASSERT_EQ(bind2(b_, cq_b_, mw, rkey, bindable_, window_addr(), kWindowLength,
                  kRemote | IBV_ACCESS_ZERO_BASED),
            IBV_WC_SUCCESS);
  buf_a_[0] = 0x5a;
  ASSERT_EQ(rdma(IBV_WR_RDMA_WRITE, rkey, 4, 1), IBV_WC_SUCCESS);
  EXPECT_EQ(buf_b_[kWindowStart + 4], 0x5a);
}

TEST_F(Mw, LocalInvalidateRevokesTheWindow) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  ASSERT_EQ(bind2(b_, cq_b_, mw, rkey, bindable_, window_addr(), kWindowLength), IBV_WC_SUCCESS);
  ASSERT_EQ(rdma(IBV_WR_RDMA_WRITE, rkey, window_addr(), 8), IBV_WC_SUCCESS);
  ibv_send_wr wr{};
  wr.wr_id = 73;
  wr.opcode = IBV_WR_LOCAL_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.invalidate_rkey = rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(b_, &wr, &bad), 0);
  const ibv_wc wc = one(cq_b_);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_LOCAL_INV);
  EXPECT_EQ(wc.wr_id, 73u);
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, rkey, window_addr(), 8), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(Mw, LocalInvalidateOfAType1WindowFails) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  ASSERT_EQ(bind1(mw, bindable_, window_addr(), kWindowLength, kRemote), IBV_WC_SUCCESS);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_LOCAL_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.invalidate_rkey = mw->rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(b_, &wr, &bad), 0);
  EXPECT_EQ(one(cq_b_).status, IBV_WC_LOC_QP_OP_ERR) << "IBA o10-37.2.26, as rxe";
}

TEST_F(Mw, SendWithInvalidateInvalidatesAtTheTarget) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  ASSERT_EQ(bind2(b_, cq_b_, mw, rkey, bindable_, window_addr(), kWindowLength), IBV_WC_SUCCESS);
  ASSERT_EQ(post_recv(b_, 55, mr_b_, buf_b_ + 2048, 64), 0);
  std::memcpy(buf_a_, "invalidate", 10);
  ibv_sge sge{addr_of(buf_a_), 10, mr_a_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 74;
  wr.opcode = IBV_WR_SEND_WITH_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.invalidate_rkey = rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  const ibv_wc sent = one(cq_a_);
  EXPECT_EQ(sent.status, IBV_WC_SUCCESS);
  EXPECT_EQ(sent.opcode, IBV_WC_SEND);
  const ibv_wc received = one(cq_b_);
  ASSERT_EQ(received.status, IBV_WC_SUCCESS);
  EXPECT_EQ(received.wr_id, 55u);
  EXPECT_EQ(received.opcode, IBV_WC_RECV);
  EXPECT_EQ(received.byte_len, 10u);
  EXPECT_TRUE(received.wc_flags & IBV_WC_WITH_INV);
  EXPECT_FALSE(received.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(received.invalidated_rkey, rkey);
  EXPECT_EQ(std::memcmp(buf_b_ + 2048, "invalidate", 10), 0);
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, rkey, window_addr(), 8), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(Mw, SendWithInvalidateOfAKeyThatNamesNoWindowIsAnInvalidRequest) {
  ASSERT_EQ(post_recv(b_, 56, mr_b_, buf_b_ + 2048, 64), 0);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND_WITH_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.invalidate_rkey = mr_b_->rkey;  // an MR of ibv_reg_mr cannot be invalidated
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  EXPECT_EQ(one(cq_a_).status, IBV_WC_REM_INV_REQ_ERR);
  const ibv_wc received = one(cq_b_);
  EXPECT_EQ(received.wr_id, 56u);
  EXPECT_EQ(received.status, IBV_WC_REM_INV_REQ_ERR);
}

TEST_F(Mw, BindToARegionWithoutMwBindAccessFails) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  EXPECT_EQ(bind2(b_, cq_b_, mw, ibv_inc_rkey(mw->rkey), mr_b_, window_addr(), 64),
            IBV_WC_MW_BIND_ERR)
      << "IBA C10-73";
  EXPECT_EQ(state_of(b_), IBV_QPS_ERR);
}

TEST_F(Mw, Type1BindToARegionWithoutMwBindAccessFails) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  EXPECT_EQ(bind1(mw, mr_b_, window_addr(), 64, kRemote), IBV_WC_MW_BIND_ERR);
}

TEST_F(Mw, BindOutsideTheRegionFails) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  EXPECT_EQ(bind2(b_, cq_b_, mw, ibv_inc_rkey(mw->rkey), bindable_, addr_of(buf_b_) + 4000, 200),
            IBV_WC_MW_BIND_ERR)
      << "IBA C10-75";
}

TEST_F(Mw, Type2BindThroughAQpOfAnotherPdFails) {
  ibv_pd* other = ibv_alloc_pd(ctx_);
  ASSERT_NE(other, nullptr);
  ibv_mw* mw = ibv_alloc_mw(other, IBV_MW_TYPE_2);
  ibv_mr* mr = ibv_reg_mr(other, buf_b_, sizeof buf_b_,
                          IBV_ACCESS_LOCAL_WRITE | kRemote | IBV_ACCESS_MW_BIND);
  ASSERT_NE(mw, nullptr);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(bind2(b_, cq_b_, mw, ibv_inc_rkey(mw->rkey), mr, window_addr(), 64), IBV_WC_MW_BIND_ERR)
      << "IBA C10-72";
}

TEST_F(Mw, Type2WindowIsReachedOnlyThroughTheQpThatBoundIt) {
  // A second connected pair in the same PD: c -> d. The window is bound
  // through b, so d does not give access to it (IBA 10.6.7.2.2, type 2B).
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* c = create_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* d = create_qp(IBV_QPT_RC, cq, cq);
  ASSERT_NE(c, nullptr);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(rc_connect(c, {.dest_qp_num = d->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(rc_connect(d, {.dest_qp_num = c->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  ASSERT_EQ(bind2(b_, cq_b_, mw, rkey, bindable_, window_addr(), kWindowLength), IBV_WC_SUCCESS);
  ASSERT_EQ(
      post_send(c, IBV_WR_RDMA_WRITE, 1, mr_a_, buf_a_, 8, IBV_SEND_SIGNALED, window_addr(), rkey),
      0);
  EXPECT_EQ(one(cq).status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, rkey, window_addr(), 8), IBV_WC_SUCCESS);
}

TEST_F(Mw, DeallocOfABoundWindowRevokesItsKeyAndFreesTheRegion) {
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  ASSERT_EQ(bind2(b_, cq_b_, mw, rkey, bindable_, window_addr(), kWindowLength), IBV_WC_SUCCESS);
  EXPECT_EQ(ibv_dereg_mr(bindable_), EINVAL) << "ibv_reg_mr(3): a window is bound to it";
  EXPECT_EQ(ibv_dealloc_mw(mw), 0);
  EXPECT_EQ(rdma(IBV_WR_RDMA_WRITE, rkey, window_addr(), 8), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ibv_dereg_mr(bindable_), 0);
}

TEST_F(Mw, BindWrRequiresAWindow) {
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_BIND_MW;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(b_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

// ibv_wr_bind_mw / ibv_wr_local_inv / ibv_wr_send_inv of the extended QP.
class MwExtended : public Mw {
 protected:
  ibv_qp* create_ex(ibv_cq* cq) {
    ibv_qp_init_attr_ex attr{};
    attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.pd = pd_;
    attr.send_cq = attr.recv_cq = cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 16;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    attr.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW |
                          IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV;
    return ibv_create_qp_ex(ctx_, &attr);
  }
};

TEST_F(MwExtended, BindWriteAndInvalidateThroughTheWrApi) {
  ibv_cq* cq_x = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_cq* cq_y = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* x = create_ex(cq_x);  // the requester
  ibv_qp* y = create_ex(cq_y);  // binds the window
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(rc_connect(x, {.dest_qp_num = y->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(rc_connect(y, {.dest_qp_num = x->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ibv_qp_ex* xx = ibv_qp_to_qp_ex(x);
  ibv_qp_ex* yx = ibv_qp_to_qp_ex(y);
  ASSERT_NE(xx, nullptr);
  ASSERT_NE(yx, nullptr);
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  const ibv_mw_bind_info info{bindable_, window_addr(), kWindowLength, kRemote};
  ibv_wr_start(yx);
  yx->wr_id = 81;
  yx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_bind_mw(yx, mw, rkey, &info);
  ASSERT_EQ(ibv_wr_complete(yx), 0);
  ibv_wc wc = one(cq_y);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_BIND_MW);
  EXPECT_EQ(wc.wr_id, 81u);

  auto write = [&] {
    buf_a_[0] = 0x77;
    ibv_wr_start(xx);
    xx->wr_id = 82;
    xx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(xx, rkey, window_addr(3));
    ibv_wr_set_sge(xx, mr_a_->lkey, addr_of(buf_a_), 1);
    EXPECT_EQ(ibv_wr_complete(xx), 0);
    return one(cq_x).status;
  };
  ASSERT_EQ(write(), IBV_WC_SUCCESS);
  EXPECT_EQ(buf_b_[kWindowStart + 3], 0x77);

  ibv_wr_start(yx);
  yx->wr_id = 83;
  ibv_wr_local_inv(yx, rkey);
  ASSERT_EQ(ibv_wr_complete(yx), 0);
  wc = one(cq_y);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_LOCAL_INV);
  EXPECT_EQ(write(), IBV_WC_REM_ACCESS_ERR);
}

}  // namespace
}  // namespace verbfault::testing

// UD multicast (ibv_attach_mcast(3), ibv_detach_mcast(3); IBA 10.5): the
// errors the kernel's ib_attach_mcast gives, and a message to a group
// reaching the attached QPs and only them.
#include "verbs_fixture.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include <unistd.h>
#include <vector>

namespace verbfault::testing {
namespace {

constexpr uint32_t kQkey = 0x01234567;
constexpr uint32_t kMulticastQpn = 0xFFFFFF;
constexpr size_t kGrh = 40;
constexpr uint16_t kMlid = 0xC123;

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// The group: ff12:4001:ffff::f01:X on InfiniBand (the RDMA CM's mapping
// of 239.1.1.X), ::ffff:239.1.X on RoCE v2; X, two bytes, from the process id.
ibv_gid group_gid(bool ethernet) {
  ibv_gid gid{};
  if (ethernet) {
    gid.raw[10] = gid.raw[11] = 0xff;
    const uint8_t v4[4] = {239, 1, 1, 1};
    std::memcpy(&gid.raw[12], v4, 4);
  } else {
    const uint8_t ib[16] = {0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x0f, 1, 1, 1};
    std::memcpy(gid.raw, ib, 16);
  }
  // A group of this process's own: a group is the fabric's, and ctest -j
  // runs the other tests of this fixture in other processes on the same
  // fabric, whose sends to a shared group this one would hear.
  const unsigned pid = static_cast<unsigned>(getpid());
  gid.raw[14] = static_cast<uint8_t>(1 + (pid >> 8) % 255);
  gid.raw[15] = static_cast<uint8_t>(1 + pid % 255);
  return gid;
}

class Multicast : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq_, nullptr);
    for (ibv_qp*& qp : qps_) {
      qp = create_qp(IBV_QPT_UD, cq_, cq_);
      ASSERT_NE(qp, nullptr);
      ASSERT_EQ(activate_ud(qp, kQkey), 0);
    }
    buf_.assign(4 * 4096, 0);
    mr_ = reg(buf_.data(), buf_.size());
    gid_ = group_gid(ethernet());
  }

  void TearDown() override {
    for (ibv_qp* qp : qps_)
      if (qp != nullptr) {
        ibv_detach_mcast(qp, &gid_, kMlid);
        EXPECT_EQ(ibv_destroy_qp(qp), 0);
      }
    SimDevice::TearDown();
  }

  uint8_t* slot(int qp) { return buf_.data() + 4096 * (qp + 1); }

  // The group's address vector: its MGID in a GRH, its MLID.
  ibv_ah* group_ah() {
    ibv_ah_attr attr{};
    attr.port_num = 1;
    attr.is_global = 1;
    attr.grh.dgid = gid_;
    attr.grh.hop_limit = 64;
    attr.grh.sgid_index = static_cast<uint8_t>(ethernet() ? roce_v2_gid_index() : 0);
    attr.dlid = ethernet() ? 0 : kMlid;
    return ibv_create_ah(pd_, &attr);
  }

  int send_to_group(ibv_ah* ah, uint32_t length) {
    ibv_sge sge{addr_of(buf_.data()), length, mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 99;
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = kMulticastQpn;
    wr.wr.ud.remote_qkey = kQkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qps_[0], &wr, &bad);
  }

  ibv_cq* cq_ = nullptr;
  ibv_qp* qps_[3] = {};
  std::vector<uint8_t> buf_;
  ibv_mr* mr_ = nullptr;
  ibv_gid gid_{};
};

TEST_F(Multicast, AMessageToTheGroupReachesEveryAttachedQpAndNoOther) {
  // qp 0 sends, qp 1 and qp 2 receive; only qp 1 is in the group.
  ASSERT_EQ(ibv_attach_mcast(qps_[1], &gid_, kMlid), 0);
  for (int q = 1; q <= 2; ++q) ASSERT_EQ(post_recv(qps_[q], 10 + q, mr_, slot(q), 4096), 0);
  ibv_ah* ah = group_ah();
  ASSERT_NE(ah, nullptr);
  std::memcpy(buf_.data(), "to the group", 12);
  ASSERT_EQ(send_to_group(ah, 12), 0);
  std::vector<ibv_wc> wcs = poll(cq_, 2);
  ASSERT_EQ(wcs.size(), 2u);
  const ibv_wc* received = nullptr;
  for (const ibv_wc& wc : wcs) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    if (wc.opcode == IBV_WC_RECV) received = &wc;
  }
  ASSERT_NE(received, nullptr);
  EXPECT_EQ(received->wr_id, 11u);
  EXPECT_EQ(received->qp_num, qps_[1]->qp_num);
  EXPECT_EQ(received->src_qp, qps_[0]->qp_num);
  EXPECT_EQ(received->byte_len, 12u + kGrh);
  EXPECT_TRUE(received->wc_flags & IBV_WC_GRH);
  EXPECT_EQ(std::memcmp(slot(1) + kGrh, "to the group", 12), 0);
  // qp 2 is not in the group: its receive is still posted.
  EXPECT_TRUE(poll(cq_, 1, 20).empty());

  // Detached, qp 1 hears the group no more.
  ASSERT_EQ(ibv_detach_mcast(qps_[1], &gid_, kMlid), 0);
  ASSERT_EQ(post_recv(qps_[1], 21, mr_, slot(1), 4096), 0);
  ASSERT_EQ(send_to_group(ah, 12), 0);
  wcs = poll(cq_, 2, 50);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(Multicast, TheSenderInTheGroupHearsItsOwnMessage) {
  // An HCA loops a group's message back to the sending QP when it is in
  // the group (mlx5 unless IBV_QP_CREATE_BLOCK_SELF_MCAST_LB).
  ASSERT_EQ(ibv_attach_mcast(qps_[0], &gid_, kMlid), 0);
  ASSERT_EQ(post_recv(qps_[0], 5, mr_, slot(0), 4096), 0);
  ibv_ah* ah = group_ah();
  ASSERT_NE(ah, nullptr);
  ASSERT_EQ(send_to_group(ah, 8), 0);
  std::vector<ibv_wc> wcs = poll(cq_, 2);
  ASSERT_EQ(wcs.size(), 2u);
  int receives = 0;
  for (const ibv_wc& wc : wcs)
    if (wc.opcode == IBV_WC_RECV) {
      ++receives;
      EXPECT_EQ(wc.qp_num, qps_[0]->qp_num);
      EXPECT_EQ(wc.src_qp, qps_[0]->qp_num);
    }
  EXPECT_EQ(receives, 1);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(Multicast, AttachAndDetachAnswerAsTheKernelDoes) {
  // Attaching twice is one attachment (ib_uverbs_attach_mcast).
  EXPECT_EQ(ibv_attach_mcast(qps_[1], &gid_, kMlid), 0);
  EXPECT_EQ(ibv_attach_mcast(qps_[1], &gid_, kMlid), 0);
  EXPECT_EQ(ibv_detach_mcast(qps_[1], &gid_, kMlid), 0);
  // Detaching a group the QP is not in: EINVAL.
  EXPECT_EQ(ibv_detach_mcast(qps_[1], &gid_, kMlid), EINVAL);
  // A GID that is no group's (ib_attach_mcast: rdma_is_multicast_addr).
  ibv_gid unicast{};
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &unicast), 0);
  EXPECT_EQ(ibv_attach_mcast(qps_[1], &unicast, kMlid), EINVAL);
  // A QP that is not UD.
  ibv_qp* rc = create_qp(IBV_QPT_RC, cq_, cq_);
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(ibv_attach_mcast(rc, &gid_, kMlid), EINVAL);
  EXPECT_EQ(ibv_destroy_qp(rc), 0);
  // InfiniBand: an MLID outside 0xC000..0xFFFE (is_valid_mcast_lid);
  // RoCE has no LIDs and takes any.
  EXPECT_EQ(ibv_attach_mcast(qps_[1], &gid_, 0x0012), ethernet() ? 0 : EINVAL);
  EXPECT_EQ(ibv_attach_mcast(qps_[1], &gid_, 0xFFFF), ethernet() ? 0 : EINVAL);
  if (ethernet()) {
    EXPECT_EQ(ibv_detach_mcast(qps_[1], &gid_, 0x0012), 0);
    EXPECT_EQ(ibv_detach_mcast(qps_[1], &gid_, 0xFFFF), 0);
  }
}

TEST_F(Multicast, AQpStillInAGroupIsNotDestroyed) {
  // uverbs_free_qp: EBUSY until the application detaches it.
  ASSERT_EQ(ibv_attach_mcast(qps_[2], &gid_, kMlid), 0);
  EXPECT_EQ(ibv_destroy_qp(qps_[2]), EBUSY);
  ASSERT_EQ(ibv_detach_mcast(qps_[2], &gid_, kMlid), 0);
  EXPECT_EQ(ibv_destroy_qp(qps_[2]), 0);
  qps_[2] = nullptr;
}

// The device reports multicast (ibv_query_device(3): groups, QPs in one
// group, attachments in all) and holds to it: the QP past
// max_mcast_qp_attach in one group is ENOMEM (rxe_attach_mcast).
TEST_F(Multicast, AGroupHoldsAtMostMaxMcastQpAttachQps) {
  ibv_device_attr attr{};
  ASSERT_EQ(ibv_query_device(ctx_, &attr), 0);
  ASSERT_GT(attr.max_mcast_grp, 0);
  ASSERT_GT(attr.max_mcast_qp_attach, 0);
  EXPECT_GE(attr.max_total_mcast_qp_attach, attr.max_mcast_qp_attach);
  ASSERT_LE(attr.max_mcast_qp_attach, 1024) << "a test of that many QPs";
  std::vector<ibv_qp*> members;
  for (int i = 0; i < attr.max_mcast_qp_attach; ++i) {
    ibv_qp* qp = create_qp(IBV_QPT_UD, cq_, cq_);
    ASSERT_NE(qp, nullptr);
    members.push_back(qp);
    ASSERT_EQ(ibv_attach_mcast(qp, &gid_, kMlid), 0) << "QP " << i;
  }
  ibv_qp* one_more = create_qp(IBV_QPT_UD, cq_, cq_);
  ASSERT_NE(one_more, nullptr);
  EXPECT_EQ(ibv_attach_mcast(one_more, &gid_, kMlid), ENOMEM);
  // Another group takes it.
  ibv_gid other = gid_;
  other.raw[15] ^= 1;
  EXPECT_EQ(ibv_attach_mcast(one_more, &other, kMlid + 1), 0);
  EXPECT_EQ(ibv_detach_mcast(one_more, &other, kMlid + 1), 0);
  EXPECT_EQ(ibv_destroy_qp(one_more), 0);
  for (ibv_qp* qp : members) {
    EXPECT_EQ(ibv_detach_mcast(qp, &gid_, kMlid), 0);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
  }
}

}  // namespace
}  // namespace verbfault::testing

// The built-in profiles as the devices report them through the verbs, one
// device of each in one process: ctest runs this binary with
// VERBFAULT_SIM_DEVICES=4 and VERBFAULT_SIM_PROFILE=vfsim0=ib,vfsim1=roce,
// vfsim2=cx6,vfsim3=<a user's file: profiles/no_windows.yaml> (per-device
// selection).
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

class ProfileDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    ASSERT_NE(list_, nullptr);
    for (int i = 0; i < n; ++i)
      for (int d = 0; d < 3; ++d)
        if (std::string(ibv_get_device_name(list_[i])) == "vfsim" + std::to_string(d))
          ctx_[d] = ibv_open_device(list_[i]);
    for (int d = 0; d < 3; ++d) ASSERT_NE(ctx_[d], nullptr) << "vfsim" << d;
    pd_ = ibv_alloc_pd(cx6());
    ASSERT_NE(pd_, nullptr);
  }
  void TearDown() override {
    for (ibv_context* ctx : ctx_)
      if (ctx != nullptr) ibv_close_device(ctx);
    if (list_ != nullptr) ibv_free_device_list(list_);
  }

  ibv_context* ib() { return ctx_[0]; }
  ibv_context* roce() { return ctx_[1]; }
  ibv_context* cx6() { return ctx_[2]; }
  static ibv_port_attr port(ibv_context* ctx) {
    ibv_port_attr attr{};
    EXPECT_EQ(ibv_query_port(ctx, 1, &attr), 0);
    return attr;
  }
  static ibv_device_attr device(ibv_context* ctx) {
    ibv_device_attr attr{};
    EXPECT_EQ(ibv_query_device(ctx, &attr), 0);
    return attr;
  }

  ibv_device** list_ = nullptr;
  ibv_context* ctx_[3] = {};
  ibv_pd* pd_ = nullptr;
};

// A profile without memory windows (max_mw 0) makes ibv_alloc_mw
// unsupported, as on a NIC without them; the built-ins have them.
TEST_F(ProfileDevices, AProfileWithoutWindowsRefusesIbvAllocMw) {
  ibv_context* plain = nullptr;
  for (int i = 0; list_[i] != nullptr; ++i)
    if (std::string(ibv_get_device_name(list_[i])) == "vfsim3") plain = ibv_open_device(list_[i]);
  ASSERT_NE(plain, nullptr) << "vfsim3 with profiles/no_windows.yaml";
  EXPECT_EQ(device(plain).max_mw, 0);
  EXPECT_EQ(device(plain).device_cap_flags & IBV_DEVICE_MEM_WINDOW, 0u);
  ibv_pd* pd = ibv_alloc_pd(plain);
  ASSERT_NE(pd, nullptr);
  errno = 0;
  EXPECT_EQ(ibv_alloc_mw(pd, IBV_MW_TYPE_1), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  EXPECT_NE(mw, nullptr) << "cx6 has windows";
  if (mw != nullptr) {
    EXPECT_EQ(ibv_dealloc_mw(mw), 0);
  }
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(plain), 0);
}

TEST_F(ProfileDevices, EachDeviceHasTheProfileNamedForIt) {
  EXPECT_EQ(port(ib()).link_layer, IBV_LINK_LAYER_INFINIBAND);
  EXPECT_NE(port(ib()).lid, 0);
  EXPECT_EQ(port(ib()).active_mtu, IBV_MTU_4096);
  EXPECT_EQ(port(roce()).link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(port(roce()).lid, 0);
  EXPECT_EQ(port(roce()).gid_tbl_len, 1024);
  EXPECT_EQ(port(cx6()).link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(port(cx6()).gid_tbl_len, 255);
  EXPECT_EQ(port(cx6()).max_msg_sz, 0x40000000u);
  EXPECT_EQ(device(cx6()).max_ah, 2147483647);
  EXPECT_EQ(device(cx6()).vendor_part_id, 4123u);
  EXPECT_EQ(device(ib()).vendor_part_id, 1u);
}

TEST_F(ProfileDevices, Cx6ListsEachAddressAsRoceV1AndV2) {
  ibv_gid_entry e[8]{};
  ASSERT_EQ(ibv_query_gid_table(cx6(), e, 8, 0), 4);
  const ibv_gid_type types[] = {IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2, IBV_GID_TYPE_ROCE_V1,
                                IBV_GID_TYPE_ROCE_V2};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(e[i].gid_type, static_cast<uint32_t>(types[i])) << i;
  EXPECT_EQ(std::memcmp(&e[0].gid, &e[1].gid, sizeof e[0].gid), 0);
  EXPECT_EQ(std::memcmp(&e[2].gid, &e[3].gid, sizeof e[2].gid), 0);
  EXPECT_EQ(e[2].gid.raw[10], 0xff) << "IPv4-mapped";
  EXPECT_EQ(e[2].gid.raw[15], 3) << "198.18.0.3: the third device";
}

TEST_F(ProfileDevices, Cx6CqLimitsAndRounding) {
  const int max_cqe = device(cx6()).max_cqe;
  EXPECT_EQ(max_cqe, 4194303);
  ibv_cq* cq = ibv_create_cq(cx6(), 100, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(cq->cqe, 127) << "2^n - 1, as mlx5 grants";
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  cq = ibv_create_cq(cx6(), max_cqe, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(cq->cqe, max_cqe);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(cx6(), max_cqe + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(ProfileDevices, Cx6GrantsWorkQueuesOfPowersOfTwo) {
  ibv_cq* cq = ibv_create_cq(cx6(), 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap = {100, 5, 1, 1, 0};
  ibv_qp* qp = ibv_create_qp(pd_, &init);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(init.cap.max_send_wr, 128u);
  EXPECT_EQ(init.cap.max_recv_wr, 8u);
  ibv_qp_attr attr{};
  ibv_qp_init_attr query{};
  ASSERT_EQ(ibv_query_qp(qp, &attr, IBV_QP_CAP, &query), 0);
  EXPECT_EQ(query.cap.max_send_wr, 128u);
  EXPECT_EQ(query.cap.max_recv_wr, 8u);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  // max_qp_wr itself is a power of two; one more is refused.
  init.cap = {32768, 1, 1, 1, 0};
  qp = ibv_create_qp(pd_, &init);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  init.cap = {32769, 1, 1, 1, 0};
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd_, &init), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // max_inline_data: the profile's 512.
  init.cap = {1, 1, 1, 1, 513};
  EXPECT_EQ(ibv_create_qp(pd_, &init), nullptr);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(ProfileDevices, Cx6SrqIsGrantedTwoToTheNMinusOneAndCannotBeResized) {
  ibv_srq_init_attr init{};
  init.attr.max_wr = 100;
  init.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &init);
  ASSERT_NE(srq, nullptr);
  EXPECT_EQ(init.attr.max_wr, 127u);
  ibv_srq_attr attr{};
  ASSERT_EQ(ibv_query_srq(srq, &attr), 0);
  EXPECT_EQ(attr.max_wr, 127u);
  // No IBV_DEVICE_SRQ_RESIZE (as mlx5): ibv_modify_srq(3) cannot resize.
  EXPECT_FALSE(device(cx6()).device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
  attr.max_wr = 200;
  EXPECT_EQ(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), EINVAL);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

// A UD datagram on cx6 from its own GID `sgid_index` to the same GID, and
// the AH ibv_init_ah_from_wc makes of its completion.
struct Loopback {
  ibv_wc wc{};
  uint8_t header[40] = {};
  ibv_ah_attr reply{};
  int reply_rc = -1;
};
Loopback ud_loopback(ibv_context* ctx, ibv_pd* pd, uint8_t sgid_index) {
  Loopback out;
  ibv_cq* cq = ibv_create_cq(ctx, 8, nullptr, nullptr, 0);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq;
  init.qp_type = IBV_QPT_UD;
  init.cap = {4, 4, 1, 1, 0};
  ibv_qp* qp = ibv_create_qp(pd, &init);
  EXPECT_NE(qp, nullptr);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = 0x11;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
  a.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
  a.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  static uint8_t buf[256];
  ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_ah_attr attr{};
  attr.port_num = 1;
  attr.is_global = 1;
  attr.grh.sgid_index = sgid_index;
  attr.grh.hop_limit = 64;
  EXPECT_EQ(ibv_query_gid(ctx, 1, sgid_index, &attr.grh.dgid), 0);
  ibv_ah* ah = ibv_create_ah(pd, &attr);
  EXPECT_NE(ah, nullptr);
  ibv_sge rsge{reinterpret_cast<uintptr_t>(buf + 64), 128, mr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  EXPECT_EQ(ibv_post_recv(qp, &rwr, &bad_r), 0);
  ibv_sge ssge{reinterpret_cast<uintptr_t>(buf), 4, mr->lkey};
  ibv_send_wr swr{};
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.wr.ud.ah = ah;
  swr.wr.ud.remote_qpn = qp->qp_num;
  swr.wr.ud.remote_qkey = 0x11;
  ibv_send_wr* bad_s = nullptr;
  EXPECT_EQ(ibv_post_send(qp, &swr, &bad_s), 0);
  ibv_wc wc[2];
  int got = 0;
  for (int i = 0; i < 100 && got < 2; ++i) got += ibv_poll_cq(cq, 2 - got, wc + got);
  EXPECT_EQ(got, 2);
  for (int i = 0; i < got; ++i)
    if (wc[i].opcode == IBV_WC_RECV) out.wc = wc[i];
  std::memcpy(out.header, buf + 64, sizeof out.header);
  out.reply_rc =
      ibv_init_ah_from_wc(ctx, 1, &out.wc, reinterpret_cast<ibv_grh*>(buf + 64), &out.reply);
  ibv_destroy_ah(ah);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  return out;
}

TEST_F(ProfileDevices, Cx6RoceV1GidSendsAnIbGrhAndTheReplyKeepsV1) {
  // IBTA Annex A16: RoCE v1 carries the IB GRH (next header 0x1b, no IP).
  Loopback v1 = ud_loopback(cx6(), pd_, 0);
  EXPECT_EQ(v1.wc.status, IBV_WC_SUCCESS);
  EXPECT_TRUE(v1.wc.wc_flags & IBV_WC_GRH);
  EXPECT_EQ(v1.header[0] >> 4, 6);
  EXPECT_EQ(v1.header[6], 0x1b) << "next header: BTH";
  ASSERT_EQ(v1.reply_rc, 0);
  EXPECT_EQ(v1.reply.grh.sgid_index, 0) << "the v1 entry, not its v2 twin at index 1";
}

TEST_F(ProfileDevices, Cx6RoceV2Ipv4GidSendsAnIpv4HeaderAndTheReplyKeepsV2) {
  Loopback v2 = ud_loopback(cx6(), pd_, 3);
  EXPECT_EQ(v2.wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(v2.header[20], 0x45) << "IPv4, 5 words";
  EXPECT_EQ(v2.header[29], 17) << "UDP";
  ASSERT_EQ(v2.reply_rc, 0);
  EXPECT_EQ(v2.reply.grh.sgid_index, 3) << "the v2 entry, not its v1 twin at index 2";
}

TEST_F(ProfileDevices, AnInfiniBandPortAndARocePortDoNotReachEachOther) {
  // The ib device addressed by LID from the roce device, and by GID from
  // itself: neither is a path (an AH needs a GRH on RoCE; the IB port is
  // not on the Ethernet network).
  ibv_pd* pd = ibv_alloc_pd(roce());
  ASSERT_NE(pd, nullptr);
  ibv_ah_attr attr{};
  attr.dlid = port(ib()).lid;
  attr.port_num = 1;
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

}  // namespace

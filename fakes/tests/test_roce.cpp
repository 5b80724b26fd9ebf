// RoCE v2 on the simulated device (VERBFAULT_SIM_PROFILE=roce; ctest runs
// these as roce.RocePort.*): an Ethernet port with no LIDs, a GID table of
// RoCE v2 entries like rxe's, addresses by GID only (IBTA Annex A17.4), and
// UD receives that start with the IP header (ibv_post_recv(3), rxe_resp.c).
// On an InfiniBand port they are skipped, with the reason; the sim_tests
// run of the `ib` profile covers that link layer.
#include "verbs_fixture.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

constexpr uint32_t kQkey = 0x22222222;
constexpr size_t kGrh = 40;

// The address plan of fakes/sim/fabric/fabric_address.h: device d of member m of
// the local fabric has the IPv4 address 198.18.<m>.<d+1> (m is whatever
// member index this test process got: ctest runs several at once).
ibv_gid ipv4_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  ibv_gid gid{};
  gid.raw[10] = gid.raw[11] = 0xff;
  gid.raw[12] = a;
  gid.raw[13] = b;
  gid.raw[14] = c;
  gid.raw[15] = d;
  return gid;
}

bool same(const ibv_gid& a, const ibv_gid& b) {
  return std::memcmp(a.raw, b.raw, sizeof a.raw) == 0;
}

class RocePort : public OnLinkLayer<SimDevice, /*kEthernet=*/true> {
 protected:
  void SetUp() override {
    OnLinkLayer::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    for (int i = 0; list_[i] != nullptr; ++i)
      if (std::string(ibv_get_device_name(list_[i])) == "vfsim1") ctx1_ = ibv_open_device(list_[i]);
    ASSERT_NE(ctx1_, nullptr) << "vfsim1 (VERBFAULT_SIM_DEVICES=2)";
  }
  void TearDown() override {
    if (ctx1_ != nullptr) ibv_close_device(ctx1_);
    SimDevice::TearDown();
  }

  ibv_gid gid(ibv_context* ctx, int index) {
    ibv_gid g{};
    EXPECT_EQ(ibv_query_gid(ctx, 1, index, &g), 0);
    return g;
  }

  ibv_context* ctx1_ = nullptr;
};

TEST_F(RocePort, QueryPortReportsAnActiveEthernetPortWithoutLids) {
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
  // IBTA A17.3: no LIDs and no subnet manager on RoCE.
  EXPECT_EQ(port.lid, 0);
  EXPECT_EQ(port.sm_lid, 0);
  // rxe on a 1500-byte netdev.
  EXPECT_EQ(port.active_mtu, IBV_MTU_1024);
  EXPECT_EQ(port.max_mtu, IBV_MTU_4096);
  EXPECT_EQ(port.gid_tbl_len, 1024);
  EXPECT_TRUE(port.port_cap_flags & IBV_PORT_IP_BASED_GIDS);
}

TEST_F(RocePort, GidTableIsLinkLocalThenIpv4BothRoceV2LikeRxe) {
  ibv_gid_entry entries[8]{};
  const ssize_t n = ibv_query_gid_table(ctx_, entries, 8, 0);
  ASSERT_EQ(n, 2);
  // Index 0: fe80::/64 and the EUI-64 of the MAC, which is the node GUID.
  EXPECT_EQ(entries[0].gid_index, 0u);
  EXPECT_EQ(entries[0].gid_type, static_cast<uint32_t>(IBV_GID_TYPE_ROCE_V2));
  EXPECT_EQ(be64toh(entries[0].gid.global.subnet_prefix), 0xfe80'0000'0000'0000ull);
  EXPECT_EQ(entries[0].gid.global.interface_id, ibv_get_device_guid(device_));
  // Index 1: the port's IPv4 address, IPv4-mapped (RFC 4291 2.5.5.2).
  EXPECT_EQ(entries[1].gid_index, 1u);
  EXPECT_EQ(entries[1].gid_type, static_cast<uint32_t>(IBV_GID_TYPE_ROCE_V2));
  const ibv_gid& ip = entries[1].gid;
  EXPECT_TRUE(same(ip, ipv4_gid(198, 18, ip.raw[14], 1)));

  ibv_gid_entry one{};
  ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, 1, &one, 0), 0);
  EXPECT_TRUE(same(one.gid, entries[1].gid));
  EXPECT_EQ(one.gid_type, static_cast<uint32_t>(IBV_GID_TYPE_ROCE_V2));
  EXPECT_TRUE(same(gid(ctx_, 1), entries[1].gid));
  // The rest of the table is empty.
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 2, &one, 0), ENODATA);
  EXPECT_TRUE(same(gid(ctx_, 2), ibv_gid{}));
}

TEST_F(RocePort, GidsDifferBetweenDevices) {
  EXPECT_FALSE(same(gid(ctx_, 0), gid(ctx1_, 0)));
  const uint8_t member = gid(ctx_, 1).raw[14];
  EXPECT_TRUE(same(gid(ctx1_, 1), ipv4_gid(198, 18, member, 2)));
  EXPECT_NE(ibv_get_device_guid(device_), ibv_get_device_guid(ctx1_->device));
}

TEST_F(RocePort, AhWithoutGrhIsEinval) {
  ibv_ah_attr attr{};
  attr.dlid = 1;
  attr.port_num = 1;
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(RocePort, AhFromAnEmptySgidIndexIsEinval) {
  ibv_ah_attr attr = address(ctx1_);
  attr.grh.sgid_index = 7;  // inside gid_tbl_len, nothing there
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  attr.grh.sgid_index = 0;
  ibv_ah* ah = ibv_create_ah(pd_, &attr);
  ASSERT_NE(ah, nullptr);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(RocePort, RtrWithoutGrhIsEinvalForRcAndUc) {
  ibv_cq* cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UC}) {
    ibv_qp* qp = create_qp(type, cq, cq);
    ASSERT_NE(qp, nullptr);
    EXPECT_EQ(rc_connect(qp, {.dest_qp_num = 0x99, .dlid = 1}), EINVAL) << type;
    EXPECT_EQ(state_of(qp), IBV_QPS_INIT) << "the failed RTR leaves it in INIT";
    EXPECT_EQ(rc_connect(qp, {.dest_qp_num = 0x99, .grh = grh(), .from = IBV_QPS_INIT}), 0);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
  }
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

// RC between vfsim0 and vfsim1, addressed by their IPv4 GIDs.
class RoceRc : public RocePort {
 protected:
  void SetUp() override {
    RocePort::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    pd1_ = ibv_alloc_pd(ctx1_);
    cq0_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    cq1_ = ibv_create_cq(ctx1_, 16, nullptr, nullptr, 0);
    ASSERT_TRUE(pd1_ && cq0_ && cq1_);
    qp0_ = create_qp(IBV_QPT_RC, cq0_, cq0_);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq1_;
    init.qp_type = IBV_QPT_RC;
    init.cap = {16, 16, 1, 1, 0};
    qp1_ = ibv_create_qp(pd1_, &init);
    ASSERT_TRUE(qp0_ && qp1_);
  }
  void TearDown() override {
    if (qp1_) ibv_destroy_qp(qp1_);
    if (qp0_) ibv_destroy_qp(qp0_);
    if (cq1_) ibv_destroy_cq(cq1_);
    if (cq0_) ibv_destroy_cq(cq0_);
    if (mr1_) ibv_dereg_mr(mr1_);
    if (pd1_) ibv_dealloc_pd(pd1_);
    RocePort::TearDown();
  }
  static ibv_global_route by_ipv4(const ibv_gid& dgid) {
    ibv_global_route route{};
    route.dgid = dgid;
    route.sgid_index = 1;
    route.hop_limit = 64;
    return route;
  }

  ibv_pd* pd1_ = nullptr;
  ibv_cq *cq0_ = nullptr, *cq1_ = nullptr;
  ibv_qp *qp0_ = nullptr, *qp1_ = nullptr;
  ibv_mr* mr1_ = nullptr;
};

TEST_F(RoceRc, SendByGidArrivesWithSlidAndSlZero) {
  ASSERT_EQ(rc_connect(qp0_, {.dest_qp_num = qp1_->qp_num, .grh = by_ipv4(gid(ctx1_, 1))}), 0);
  ASSERT_EQ(rc_connect(qp1_, {.dest_qp_num = qp0_->qp_num, .grh = by_ipv4(gid(ctx_, 1))}), 0);
  char out[32] = "over RoCE v2";
  char in[32] = {};
  ibv_mr* mr0 = reg(out, sizeof out);
  mr1_ = ibv_reg_mr(pd1_, in, sizeof in, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(mr0 && mr1_);
  ASSERT_EQ(post_recv(qp1_, 7, mr1_, in, sizeof in), 0);
  ASSERT_EQ(post_send(qp0_, IBV_WR_SEND, 8, mr0, out, 13), 0);
  auto sent = poll(cq0_, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  auto got = poll(cq1_, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].byte_len, 13u);
  // RoCE carries no LID and no SL: 0, as rxe reports.
  EXPECT_EQ(got[0].slid, 0);
  EXPECT_EQ(got[0].sl, 0);
  EXPECT_STREQ(in, "over RoCE v2");
  EXPECT_EQ(ibv_dereg_mr(mr0), 0);
}

TEST_F(RoceRc, SendToAGidNobodyHasEndsInRetryExceeded) {
  ASSERT_EQ(rc_connect(qp0_, {.dest_qp_num = qp1_->qp_num,
                              .grh = by_ipv4(ipv4_gid(192, 0, 2, 1)),
                              .timeout = 8,
                              .retry_cnt = 1}),
            0);
  ASSERT_EQ(post_send(qp0_, IBV_WR_SEND, 1, nullptr, nullptr, 0), 0);
  auto wc = poll(cq0_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
}

TEST_F(RoceRc, TheLidOfAnAddressIsNotUsed) {
  // A RoCE path is its DGID: a DLID that names another port changes nothing.
  ibv_global_route to1 = by_ipv4(gid(ctx1_, 1));
  ASSERT_EQ(rc_connect(qp0_, {.dest_qp_num = qp1_->qp_num, .dlid = 77, .grh = to1}), 0);
  ASSERT_EQ(rc_connect(qp1_, {.dest_qp_num = qp0_->qp_num, .grh = by_ipv4(gid(ctx_, 1))}), 0);
  char in[8] = {};
  mr1_ = ibv_reg_mr(pd1_, in, sizeof in, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_EQ(post_recv(qp1_, 1, mr1_, in, sizeof in), 0);
  ASSERT_EQ(post_send(qp0_, IBV_WR_SEND, 2, nullptr, nullptr, 0), 0);
  auto wc = poll(cq0_, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
}

// UD from vfsim0 to vfsim1, and back with an AH made from the completion.
class RoceUd : public RocePort {
 protected:
  void SetUp() override {
    RocePort::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    pd1_ = ibv_alloc_pd(ctx1_);
    cq0_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    cq1_ = ibv_create_cq(ctx1_, 16, nullptr, nullptr, 0);
    ASSERT_TRUE(pd1_ && cq0_ && cq1_);
    qp0_ = create_qp(IBV_QPT_UD, cq0_, cq0_);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq1_;
    init.qp_type = IBV_QPT_UD;
    init.cap = {16, 16, 1, 1, 0};
    qp1_ = ibv_create_qp(pd1_, &init);
    ASSERT_TRUE(qp0_ && qp1_);
    ASSERT_EQ(activate_ud(qp0_, kQkey), 0);
    ASSERT_EQ(activate_ud(qp1_, kQkey), 0);
    buf0_.assign(512, 0);
    buf1_.assign(512, 0);
    mr0_ = reg(buf0_.data(), buf0_.size());
    mr1_ = ibv_reg_mr(pd1_, buf1_.data(), buf1_.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(mr0_ && mr1_);
  }
  void TearDown() override {
    for (ibv_ah* ah : ahs_) ibv_destroy_ah(ah);
    if (qp1_) ibv_destroy_qp(qp1_);
    if (qp0_) ibv_destroy_qp(qp0_);
    if (cq1_) ibv_destroy_cq(cq1_);
    if (cq0_) ibv_destroy_cq(cq0_);
    if (mr1_) ibv_dereg_mr(mr1_);
    if (pd1_) ibv_dealloc_pd(pd1_);
    RocePort::TearDown();
  }

  // Sends `len` bytes of buf0_ from vfsim0 (GID index sgid_index) to
  // vfsim1's GID dgid_index; returns vfsim1's receive completion.
  ibv_wc send_to_1(uint8_t sgid_index, int dgid_index, uint32_t len, uint8_t hop_limit = 64,
                   uint8_t traffic_class = 0) {
    ibv_ah_attr attr{};
    attr.port_num = 1;
    attr.is_global = 1;
    attr.grh.dgid = gid(ctx1_, dgid_index);
    attr.grh.sgid_index = sgid_index;
    attr.grh.hop_limit = hop_limit;
    attr.grh.traffic_class = traffic_class;
    ibv_ah* ah = ibv_create_ah(pd_, &attr);
    EXPECT_NE(ah, nullptr);
    if (ah == nullptr) return {};
    ahs_.push_back(ah);
    EXPECT_EQ(post_recv(qp1_, 1, mr1_, buf1_.data(), static_cast<uint32_t>(buf1_.size())), 0);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf0_.data()), len, mr0_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 2;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = qp1_->qp_num;
    wr.wr.ud.remote_qkey = kQkey;
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(qp0_, &wr, &bad), 0);
    EXPECT_EQ(poll(cq0_, 1).size(), 1u);
    auto got = poll(cq1_, 1);
    EXPECT_EQ(got.size(), 1u);
    return got.empty() ? ibv_wc{} : got[0];
  }

  ibv_pd* pd1_ = nullptr;
  ibv_cq *cq0_ = nullptr, *cq1_ = nullptr;
  ibv_qp *qp0_ = nullptr, *qp1_ = nullptr;
  ibv_mr *mr0_ = nullptr, *mr1_ = nullptr;
  std::vector<uint8_t> buf0_, buf1_;
  std::vector<ibv_ah*> ahs_;
};

TEST_F(RoceUd, ReceiveByIpv4GidHoldsTheIpv4HeaderInBytes20To39) {
  std::memcpy(buf0_.data(), "datagram", 8);
  const ibv_wc wc = send_to_1(1, 1, 8, 33, 0x48);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
  EXPECT_EQ(wc.byte_len, 8u + kGrh);
  EXPECT_EQ(wc.src_qp, qp0_->qp_num);
  EXPECT_EQ(wc.slid, 0);
  // No service level on RoCE: the header's kind, as mlx5 reports it (UDP,
  // IPv4: network_header.h), where UCX looks for it.
  EXPECT_EQ(wc.sl, 0xa);
  const uint8_t* b = buf1_.data();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(b[i], 0) << "byte " << i << " (before the IPv4 header)";
  const uint8_t* ip = b + 20;
  EXPECT_EQ(ip[0] >> 4, 4) << "version";
  EXPECT_EQ(ip[0] & 0xf, 5) << "IHL";
  EXPECT_EQ(ip[1], 0x48) << "TOS: the traffic class";
  // IP (20) + UDP (8) + BTH (12) + DETH (8) + payload + ICRC (4).
  EXPECT_EQ(ip[2] << 8 | ip[3], 20 + 8 + 12 + 8 + 8 + 4);
  EXPECT_EQ(ip[8], 33) << "TTL: the hop limit";
  EXPECT_EQ(ip[9], 17) << "protocol UDP";
  EXPECT_EQ(std::memcmp(ip + 12, gid(ctx_, 1).raw + 12, 4), 0) << "source: vfsim0's IPv4 address";
  EXPECT_EQ(std::memcmp(ip + 16, gid(ctx1_, 1).raw + 12, 4), 0) << "destination: vfsim1's";
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uint32_t{ip[i]} << 8 | ip[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu) << "the header checksum (RFC 791)";
  EXPECT_EQ(std::memcmp(b + kGrh, "datagram", 8), 0);
}

TEST_F(RoceUd, ReceiveByLinkLocalGidHoldsAnIpv6Header) {
  const ibv_wc wc = send_to_1(0, 0, 4);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
  EXPECT_EQ(wc.sl, 0x9) << "UDP, IPv6";
  ibv_grh ip6;
  std::memcpy(&ip6, buf1_.data(), sizeof ip6);
  EXPECT_EQ(be32toh(ip6.version_tclass_flow) >> 28, 6u);
  EXPECT_EQ(ip6.next_hdr, 17) << "UDP: RoCE v2";
  EXPECT_EQ(be16toh(ip6.paylen), 8 + 12 + 8 + 4 + 4);
  EXPECT_TRUE(same(ip6.sgid, gid(ctx_, 0)));
  EXPECT_TRUE(same(ip6.dgid, gid(ctx1_, 0)));
}

TEST_F(RoceUd, AhFromTheCompletionRepliesToTheSender) {
  ibv_wc wc = send_to_1(1, 1, 8);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  ibv_ah_attr attr{};
  ASSERT_EQ(ibv_init_ah_from_wc(ctx1_, 1, &wc, reinterpret_cast<ibv_grh*>(buf1_.data()), &attr), 0);
  // libibverbs rebuilds the sender's GID from the IPv4 source address and
  // finds our own by the destination address.
  EXPECT_EQ(attr.is_global, 1);
  EXPECT_TRUE(same(attr.grh.dgid, gid(ctx_, 1)));
  EXPECT_EQ(attr.grh.sgid_index, 1);
  EXPECT_EQ(attr.dlid, 0);
  ibv_ah* reply = ibv_create_ah_from_wc(pd1_, &wc, reinterpret_cast<ibv_grh*>(buf1_.data()), 1);
  ASSERT_NE(reply, nullptr);
  ahs_.push_back(reply);
  // The reply arrives at vfsim0 from vfsim1's IPv4 address.
  ASSERT_EQ(post_recv(qp0_, 3, mr0_, buf0_.data() + 256, 256), 0);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf1_.data() + kGrh), 8, mr1_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 4;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = reply;
  wr.wr.ud.remote_qpn = wc.src_qp;
  wr.wr.ud.remote_qkey = kQkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(qp1_, &wr, &bad), 0);
  EXPECT_EQ(poll(cq1_, 1).size(), 1u);
  auto back = poll(cq0_, 1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(back[0].src_qp, qp1_->qp_num);
  EXPECT_EQ(std::memcmp(buf0_.data() + 256 + 20 + 12, gid(ctx1_, 1).raw + 12, 4), 0);
}

TEST_F(RoceUd, AhFromACompletionWithoutGrhIsEinval) {
  ibv_wc wc{};
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RECV;
  ibv_ah_attr attr{};
  EXPECT_NE(ibv_init_ah_from_wc(ctx_, 1, &wc, nullptr, &attr), 0);
}

}  // namespace
}  // namespace verbfault::testing

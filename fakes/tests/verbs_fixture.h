// Test fixtures that drive the simulated device through <infiniband/verbs.h>
// only: the test binary is linked against libverbfault.so ahead of
// libibverbs, exactly as a user's test would be.
#pragma once

#include <infiniband/verbs.h>
#include <verbfault_testing/rc_connect.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace verbfault::testing {

// Opens the first simulated device (vfsim0) and allocates a PD.
class SimDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    ASSERT_NE(list_, nullptr);
    for (int i = 0; i < n; ++i)
      if (std::string(ibv_get_device_name(list_[i])) == "vfsim0") device_ = list_[i];
    ASSERT_NE(device_, nullptr) << "vfsim0 not listed";
    ctx_ = ibv_open_device(device_);
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
  }
  void TearDown() override {
    // Every test releases what it created; whatever is left is freed here
    // with the context (ibv_close_device(3)).
    if (ctx_ != nullptr) ibv_close_device(ctx_);
    if (list_ != nullptr) ibv_free_device_list(list_);
  }

  ibv_mr* reg(void* buf, size_t len,
              int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC) {
    ibv_mr* mr = ibv_reg_mr(pd_, buf, len, access);
    EXPECT_NE(mr, nullptr);
    return mr;
  }

  ibv_qp* create_qp(ibv_qp_type type, ibv_cq* send_cq, ibv_cq* recv_cq, uint32_t depth = 16,
                    ibv_srq* srq = nullptr, int sq_sig_all = 0) {
    ibv_qp_init_attr init{};
    init.send_cq = send_cq;
    init.recv_cq = recv_cq;
    init.srq = srq;
    init.qp_type = type;
    init.sq_sig_all = sq_sig_all;
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = depth;
    init.cap.max_send_sge = 4;
    init.cap.max_recv_sge = 4;
    init.cap.max_inline_data = 64;
    return ibv_create_qp(pd_, &init);
  }

  uint16_t lid(ibv_context* ctx = nullptr) {
    ibv_port_attr port{};
    EXPECT_EQ(ibv_query_port(ctx ? ctx : ctx_, 1, &port), 0);
    return port.lid;
  }

  // Whether the port of ctx (default: this device's) is a RoCE port
  // (VERBFAULT_SIM_PROFILE=roce): addressed by GID, with no LIDs.
  bool ethernet(ibv_context* ctx = nullptr) {
    ibv_port_attr port{};
    EXPECT_EQ(ibv_query_port(ctx ? ctx : ctx_, 1, &port), 0);
    return port.link_layer == IBV_LINK_LAYER_ETHERNET;
  }

  // The index of the first RoCE v2 GID of ctx's port (-1: none).
  int roce_v2_gid_index(ibv_context* ctx = nullptr) {
    ibv_gid_entry entries[16];
    const ssize_t n = ibv_query_gid_table(ctx ? ctx : ctx_, entries, 16, 0);
    for (ssize_t i = 0; i < n; ++i)
      if (entries[i].gid_type == IBV_GID_TYPE_ROCE_V2)
        return static_cast<int>(entries[i].gid_index);
    return -1;
  }

  // The GRH that reaches the port of ctx (default: this device's) from a
  // port of the same profile: none (all zero) on InfiniBand, where the LID
  // addresses it; its first RoCE v2 GID on Ethernet (IBTA Annex A17.4).
  ibv_global_route grh(ibv_context* ctx = nullptr) {
    ibv_global_route route{};
    if (!ethernet(ctx)) return route;
    const int index = roce_v2_gid_index(ctx);
    EXPECT_GE(index, 0) << "a RoCE port without a RoCE v2 GID";
    if (index < 0) return route;
    EXPECT_EQ(ibv_query_gid(ctx ? ctx : ctx_, 1, index, &route.dgid), 0);
    route.sgid_index = static_cast<uint8_t>(index);
    route.hop_limit = 64;
    return route;
  }

  // An address vector that reaches the port of ctx: its LID, and its GRH
  // where the link layer needs one.
  ibv_ah_attr address(ibv_context* ctx = nullptr) {
    ibv_ah_attr ah{};
    ah.dlid = lid(ctx);
    ah.port_num = 1;
    if (ethernet(ctx)) {
      ah.is_global = 1;
      ah.grh = grh(ctx);
    }
    return ah;
  }

  // RC and UC QPs are connected with rc_connect (<verbfault_testing/rc_connect.h>).

  // RESET -> INIT -> RTR -> RTS for a UD QP with the given Q_Key.
  static int activate_ud(ibv_qp* qp, uint32_t qkey) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qkey = qkey;
    if (int rc =
            ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
      return rc;
    a = {};
    a.qp_state = IBV_QPS_RTR;
    if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE)) return rc;
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
  }

  static ibv_qp_state state_of(ibv_qp* qp) {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    EXPECT_EQ(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
    return attr.qp_state;
  }

  // Polls until `count` completions arrived or `max_polls` polls were made.
  static std::vector<ibv_wc> poll(ibv_cq* cq, size_t count, int max_polls = 1000) {
    std::vector<ibv_wc> out;
    for (int i = 0; i < max_polls && out.size() < count; ++i) {
      ibv_wc wc[16];
      int n = ibv_poll_cq(cq, 16, wc);
      EXPECT_GE(n, 0);
      if (n < 0) break;
      out.insert(out.end(), wc, wc + n);
    }
    return out;
  }

  static int post_send(ibv_qp* qp, ibv_wr_opcode opcode, uint64_t wr_id, ibv_mr* mr, void* buf,
                       uint32_t len, unsigned flags = IBV_SEND_SIGNALED, uint64_t remote_addr = 0,
                       uint32_t rkey = 0) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, mr ? mr->lkey : 0};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = len ? 1 : 0;
    wr.opcode = opcode;
    wr.send_flags = flags;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }

  static int post_recv(ibv_qp* qp, uint64_t wr_id, ibv_mr* mr, void* buf, uint32_t len) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  }

  ibv_device** list_ = nullptr;
  ibv_device* device_ = nullptr;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
};

// Two RC QPs on vfsim0 connected to each other, each with its own CQ.
class RcPair : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    build_pair(nullptr, nullptr, nullptr);
  }

  // The two CQs (reporting to `channel`, with the given cq_contexts), the
  // QPs, their connection and one registered buffer per side.
  void build_pair(ibv_comp_channel* channel, void* cq_context_a, void* cq_context_b) {
    cq_a_ = ibv_create_cq(ctx_, 64, cq_context_a, channel, 0);
    cq_b_ = ibv_create_cq(ctx_, 64, cq_context_b, channel, 0);
    ASSERT_NE(cq_a_, nullptr);
    ASSERT_NE(cq_b_, nullptr);
    a_ = create_qp(IBV_QPT_RC, cq_a_, cq_a_);
    b_ = create_qp(IBV_QPT_RC, cq_b_, cq_b_);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_EQ(rc_connect(a_, {.dest_qp_num = b_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    ASSERT_EQ(rc_connect(b_, {.dest_qp_num = a_->qp_num, .dlid = lid(), .grh = grh()}), 0);
    mr_a_ = reg(buf_a_, sizeof buf_a_);
    mr_b_ = reg(buf_b_, sizeof buf_b_);
    ASSERT_NE(mr_a_, nullptr);
    ASSERT_NE(mr_b_, nullptr);
  }

  ibv_cq* cq_a_ = nullptr;
  ibv_cq* cq_b_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
  alignas(64) uint8_t buf_a_[4096] = {};
  alignas(64) uint8_t buf_b_[4096] = {};
  ibv_mr* mr_a_ = nullptr;
  ibv_mr* mr_b_ = nullptr;
};

// A fixture whose tests are of one link layer only (kEthernet: RoCE, else
// InfiniBand). ctest registers the suites named InfiniBand* on the ib
// profile alone and Roce* on the roce profile alone (fakes/tests/
// CMakeLists.txt); run by hand on the other, they skip, saying why.
template <class Base, bool kEthernet>
class OnLinkLayer : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (Base::HasFatalFailure()) return;
    if (this->ethernet() != kEthernet)
      GTEST_SKIP() << (kEthernet
                           ? "needs a RoCE port (VERBFAULT_SIM_PROFILE=roce; ctest: roce.*)"
                           : "needs an InfiniBand port (the ib profile; ctest: without roce.)");
  }
};

}  // namespace verbfault::testing

// The loopback pair the field-failure programs share
// (scenarios/field_failures): one RC QP pair on the first device, both QPs
// completing into one CQ that reports to a completion channel, and the
// `PROGRAM buggy|fixed` entry point of every program. Plain libibverbs, so
// it runs on any RC-capable device, real or simulated; on iWARP (siw),
// where a QP reaches RTS only over a connection a peer accepted, the pair
// connects through librdmacm as an iWARP application does.
#pragma once

#include "verbfault_testing/iwarp_connect.h"

#include <infiniband/verbs.h>

#include <string>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace field_failures {

// A verb failed: the program says which, as "PROGRAM: VERB failed: ERROR",
// and ends with exit status 1.
[[noreturn]] inline void fail(const char* what, int err) {
  std::fprintf(stderr, "%s: %s failed: %s\n", program_invocation_short_name, what,
               std::strerror(err));
  std::exit(1);
}

// One RC QP pair in loopback, a (sender) -> b (receiver), both completing
// into `cq`, which reports to `channel`.
struct Pair {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_cq* other_cq = nullptr;  // a second CQ on the same channel (F07)
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  ibv_mr* mr = nullptr;
  char buffer[4096] = {};

  // `rnr_retry`: how often a's and b's SENDs are retried after an RNR NAK
  // (7: forever).
  explicit Pair(int cqe = 64, uint32_t depth = 8, uint8_t rnr_retry = 7) {
    ctx = open_first_device();
    pd = ibv_alloc_pd(ctx);
    channel = ibv_create_comp_channel(ctx);
    cq = ibv_create_cq(ctx, cqe, nullptr, channel, 0);
    other_cq = ibv_create_cq(ctx, 16, nullptr, channel, 0);
    if (!pd || !channel || !cq || !other_cq) fail("setup", errno);
    a = make_qp(pd, cq, cq, depth);
    b = make_qp(pd, cq, cq, depth);
    mr = ibv_reg_mr(pd, buffer, sizeof buffer, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) fail("ibv_reg_mr", errno);
    connect_to_each_other(ctx, a, b, rnr_retry);
  }

  static constexpr uint8_t kRoceGidIndex = 1;

  // The first device of the system, opened.
  static ibv_context* open_first_device() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr || n == 0) fail("ibv_get_device_list", ENODEV);
    ibv_context* opened = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (opened == nullptr) fail("ibv_open_device", errno);
    return opened;
  }

  // An RC QP of `depth` WRs each way, one SGE each.
  static ibv_qp* make_qp(ibv_pd* pd, ibv_cq* send_cq, ibv_cq* recv_cq, uint32_t depth) {
    ibv_qp_init_attr init{};
    init.send_cq = send_cq;
    init.recv_cq = recv_cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = depth;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd, &init);
    if (!qp) fail("ibv_create_qp", errno);
    return qp;
  }

  // `a` and `b`, two RC QPs on port 1 of `ctx`, connected to each other.
  static void connect_to_each_other(ibv_context* ctx, ibv_qp* a, ibv_qp* b, uint8_t rnr_retry = 7) {
    if (ctx->device->transport_type == IBV_TRANSPORT_IWARP) {
      // INIT, then the iWARP CM connects them (rnr_retry has no iWARP
      // counterpart: there is no RNR NAK).
      to_init(a);
      to_init(b);
      std::string why;
      if (int err = verbfault::testing::iwarp_connect(ctx, a, b, 5000, &why))
        fail(("connecting over the rdma_cm: " + why).c_str(), err);
      return;
    }
    ibv_port_attr port{};
    if (ibv_query_port(ctx, 1, &port)) fail("ibv_query_port", errno);
    // A RoCE port has no LID: the path needs a GRH with the port's own GID
    // (IBTA Annex A16/A17). Index 1, as the sample: rxe's RoCEv2 GID of the
    // netdev's IPv4 address (index 0 is the link-local one).
    const ibv_gid* grh = nullptr;
    ibv_gid gid{};
    if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
      if (ibv_query_gid(ctx, 1, kRoceGidIndex, &gid)) fail("ibv_query_gid", errno);
      grh = &gid;
    }
    connect(a, b->qp_num, port.lid, rnr_retry, grh);
    connect(b, a->qp_num, port.lid, rnr_retry, grh);
  }

  // RESET -> INIT on port 1, remote writes allowed.
  static void to_init(ibv_qp* qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      fail("ibv_modify_qp(INIT)", errno);
  }

  // INIT -> RTR -> RTS towards `remote`; `rnr_retry` 7 retries an RNR NAK
  // forever (IBA 9.7.5.2.8), fewer ends in IBV_WC_RNR_RETRY_EXC_ERR.
  // `grh`: the GID to address (a RoCE port), or none (InfiniBand: the LID).
  static void connect(ibv_qp* qp, uint32_t remote, uint16_t lid, uint8_t rnr_retry = 7,
                      const ibv_gid* grh = nullptr) {
    to_init(qp);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = remote;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.dlid = lid;
    a.ah_attr.port_num = 1;
    if (grh != nullptr) {
      a.ah_attr.is_global = 1;
      a.ah_attr.grh.dgid = *grh;
      a.ah_attr.grh.sgid_index = kRoceGidIndex;
      a.ah_attr.grh.hop_limit = 1;
    }
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      fail("ibv_modify_qp(RTR)", errno);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
      fail("ibv_modify_qp(RTS)", errno);
  }

  // A signaled 8-byte RDMA WRITE from a: one completion on cq.
  int write(uint64_t wr_id, uint32_t length = 8) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), length, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buffer + 2048);
    wr.wr.rdma.rkey = mr->rkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(a, &wr, &bad);
  }

  // A signaled SEND of `length` bytes (immediate data `imm` when set) from
  // `qp`; 0 or the errno of ibv_post_send.
  int send(ibv_qp* qp, uint64_t wr_id, uint32_t length = 8, const uint32_t* imm = nullptr) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), length, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = imm != nullptr ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    if (imm != nullptr) wr.imm_data = *imm;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }

  // A receive of up to 64 bytes on `qp` into the second half of the buffer
  // (slot `slot` of 32); 0 or the errno of ibv_post_recv.
  int receive(ibv_qp* qp, uint64_t wr_id, unsigned slot = 0) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer + 2048 + 64 * (slot % 32)), 64, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  }

  void arm(ibv_cq* which) {
    if (int rc = ibv_req_notify_cq(which, 0)) fail("ibv_req_notify_cq", rc);
  }

  ibv_cq* wait() {
    ibv_cq* got = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(channel, &got, &context)) fail("ibv_get_cq_event", errno);
    return got;
  }

  int poll(int max, ibv_wc* wc = nullptr) {
    ibv_wc local[16];
    const int n = ibv_poll_cq(cq, max, wc != nullptr ? wc : local);
    if (n < 0) fail("ibv_poll_cq", EIO);
    return n;
  }

  // One full, correct round: arm, write, event, ack, re-arm, drain.
  void round(uint64_t wr_id) {
    arm(cq);
    if (write(wr_id)) fail("ibv_post_send", errno);
    ibv_ack_cq_events(wait(), 1);
    arm(cq);
    while (poll(16) > 0) {
    }
  }

  void teardown() {
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    ibv_dereg_mr(mr);
    if (int rc = ibv_destroy_cq(cq)) fail("ibv_destroy_cq", rc);
    if (int rc = ibv_destroy_cq(other_cq)) fail("ibv_destroy_cq", rc);
    ibv_destroy_comp_channel(channel);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
  }
};

// The entry point of a field-failure program: `PROGRAM buggy|fixed` runs
// `body(fixed)`, then says "PROGRAM: VARIANT: done" and returns 0; a usage
// error is exit status 2. The body ends the program with 1 itself when it
// sees a verb fail.
inline int run_variant(int argc, char** argv, void (*body)(bool fixed)) {
  const char* variant = argc == 2 ? argv[1] : "";
  const bool fixed = std::strcmp(variant, "fixed") == 0;
  if (!fixed && std::strcmp(variant, "buggy") != 0) {
    std::fprintf(stderr, "usage: %s buggy|fixed\n", program_invocation_short_name);
    return 2;
  }
  body(fixed);
  std::printf("%s: %s: done\n", program_invocation_short_name, variant);
  return 0;
}

}  // namespace field_failures

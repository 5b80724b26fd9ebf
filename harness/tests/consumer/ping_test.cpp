// A user's own test of their RDMA code with the installed verbfault: the
// docs/using.md's example, built and run against the installed package in CI
// (harness/tests/check_find_package.cmake).
//
// The code under test, ping(), sends one message over an RC loopback pair
// and reports whether its completion came back successful.
#include <verbfault/matchers.h>
#include <verbfault/mock_verbs.h>
#include <verbfault/rapidcheck.h>
#include <verbfault/session.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

namespace {

using ::testing::_;
using ::testing::IsEmpty;
using ::testing::Return;
using ::testing::UnorderedElementsAre;

// ---- the code under test ---------------------------------------------------------------

struct Loopback {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp[2] = {nullptr, nullptr};
  ibv_mr* mr = nullptr;
  char buffer[256] = {};

  bool open() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    for (int i = 0; list != nullptr && i < n && ctx == nullptr; ++i)
      if (std::strcmp(ibv_get_device_name(list[i]), "vfsim0") == 0) ctx = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    if (ctx == nullptr || (pd = ibv_alloc_pd(ctx)) == nullptr) return false;
    if ((cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0)) == nullptr) return false;
    mr = ibv_reg_mr(pd, buffer, sizeof buffer, IBV_ACCESS_LOCAL_WRITE);
    ibv_port_attr port{};
    if (mr == nullptr || ibv_query_port(ctx, 1, &port) != 0) return false;
    for (ibv_qp*& q : qp) {
      ibv_qp_init_attr init{};
      init.send_cq = init.recv_cq = cq;
      init.qp_type = IBV_QPT_RC;
      init.cap.max_send_wr = init.cap.max_recv_wr = 4;
      init.cap.max_send_sge = init.cap.max_recv_sge = 1;
      if ((q = ibv_create_qp(pd, &init)) == nullptr) return false;
    }
    return connect(qp[0], qp[1]->qp_num, port.lid) && connect(qp[1], qp[0]->qp_num, port.lid);
  }

  static bool connect(ibv_qp* q, uint32_t remote, uint16_t lid) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return false;
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = remote;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.dlid = lid;
    a.ah_attr.port_num = 1;
    if (ibv_modify_qp(q, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return false;
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 3;
    a.rnr_retry = 3;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(q, &a,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0;
  }

  void close() {
    for (ibv_qp* q : qp)
      if (q != nullptr) ibv_destroy_qp(q);
    if (mr != nullptr) ibv_dereg_mr(mr);
    if (cq != nullptr) ibv_destroy_cq(cq);
    if (pd != nullptr) ibv_dealloc_pd(pd);
    if (ctx != nullptr) ibv_close_device(ctx);
  }
};

// Sends one message from qp[0] to qp[1]; the completions it polled, until
// both arrived or 1000 polls (it never blocks).
std::vector<ibv_wc> ping(Loopback& l) {
  std::vector<ibv_wc> polled;
  ibv_sge recv_sge{reinterpret_cast<uintptr_t>(l.buffer + 128), 64, l.mr->lkey};
  ibv_recv_wr recv{};
  recv.wr_id = 2;
  recv.sg_list = &recv_sge;
  recv.num_sge = 1;
  ibv_recv_wr* bad_recv = nullptr;
  if (ibv_post_recv(l.qp[1], &recv, &bad_recv) != 0) return polled;
  ibv_sge sge{reinterpret_cast<uintptr_t>(l.buffer), 8, l.mr->lkey};
  ibv_send_wr send{};
  send.wr_id = 1;
  send.sg_list = &sge;
  send.num_sge = 1;
  send.opcode = IBV_WR_SEND;
  send.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(l.qp[0], &send, &bad) != 0) return polled;
  for (int i = 0; i < 1000 && polled.size() < 2; ++i) {
    ibv_wc wc[2];
    const int n = ibv_poll_cq(l.cq, 2, wc);
    if (n < 0) break;
    polled.insert(polled.end(), wc, wc + n);
  }
  return polled;
}

// ---- the tests --------------------------------------------------------------------------

TEST(Ping, SucceedsWithoutFaults) {
  verbfault::Session session(verbfault::Plan{}, 1);
  Loopback l;
  ASSERT_TRUE(l.open());
  // Completions of different work queues come in any order (the seed draws
  // one): unordered.
  EXPECT_THAT(ping(l), UnorderedElementsAre(verbfault::WcIs(IBV_WC_SUCCESS, IBV_WC_RECV),
                                            verbfault::WcIs(IBV_WC_SUCCESS, IBV_WC_SEND)));
  l.close();
  EXPECT_THAT(session.findings(), IsEmpty());
}

TEST(Ping, ReportsRnrRetryExhaustion) {
  verbfault::Session session(verbfault::parse_rules("rnr_retry_exhausted qp#0 nth=1"), 1);
  Loopback l;
  ASSERT_TRUE(l.open());
  const std::vector<ibv_wc> polled = ping(l);
  ASSERT_EQ(polled.size(), 1u) << "the receive never gets the message";
  EXPECT_THAT(polled[0], verbfault::WcStatusIs(IBV_WC_RNR_RETRY_EXC_ERR));
  EXPECT_THAT(polled[0], verbfault::WcWithId(1));
  EXPECT_EQ(session.fired()[0], 1u);
  l.close();
}

TEST(Ping, AFailedPollIsReported) {
  verbfault::Session session(verbfault::Plan{}, 1);
  Loopback l;
  ASSERT_TRUE(l.open());
  ::testing::NiceMock<verbfault::MockVerbs> verbs(l.ctx);
  EXPECT_CALL(verbs, poll_cq(l.cq, _, _)).WillOnce(Return(-EIO));
  EXPECT_THAT(ping(l), IsEmpty());
  l.close();
}

// Whatever the plan, ping() ends, and never reports a success it did not get.
RC_GTEST_PROP(Ping, EndsAndNeverReportsAFalseSuccess, (verbfault::Plan plan)) {
  verbfault::Session session(plan, *rc::gen::arbitrary<std::uint64_t>());
  Loopback l;
  if (l.open()) {
    for (const ibv_wc& wc : ping(l)) RC_ASSERT(wc.status == IBV_WC_SUCCESS || wc.wr_id <= 2);
  }
  l.close();
}

}  // namespace

// The QP state machine through ibv_create_qp(3), ibv_modify_qp(3) and
// ibv_query_qp(3): legal transitions with their required and optional
// attribute masks (IBA 10.3.1, the kernel's ib_modify_qp_is_ok table),
// illegal transitions, out-of-range values and create-time checks.
#include "verbs_fixture.h"

#include <cerrno>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

constexpr int kPath = IBV_QP_PKEY_INDEX | IBV_QP_PORT;

// The attributes ibv_modify_qp(3) requires for the three forward steps.
int init_mask(ibv_qp_type type) {
  return kPath | (type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
}
int rtr_mask(ibv_qp_type type) {
  switch (type) {
    case IBV_QPT_RC:
      return IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    case IBV_QPT_UC:
      return IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    default:
      return 0;
  }
}
int rts_mask(ibv_qp_type type) {
  if (type == IBV_QPT_RC)
    return IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return IBV_QP_SQ_PSN;
}

ibv_ah_attr lid_one() {
  ibv_ah_attr av{};
  av.dlid = 1;
  av.port_num = 1;
  return av;
}

// Valid values for every attribute, so that only the mask decides; `av`
// is the path (SimDevice::address() for the port's own, which on a RoCE
// port carries the GRH it needs).
ibv_qp_attr attrs(ibv_qp_state state, const ibv_ah_attr& av = lid_one()) {
  ibv_qp_attr a{};
  a.qp_state = state;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qkey = 0x1234;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  a.path_mtu = IBV_MTU_2048;
  a.dest_qp_num = 0x77;
  a.rq_psn = 0x100;
  a.sq_psn = 0x200;
  a.max_dest_rd_atomic = 4;
  a.max_rd_atomic = 2;
  a.min_rnr_timer = 9;
  a.timeout = 17;
  a.retry_cnt = 5;
  a.rnr_retry = 3;
  a.ah_attr = av;
  a.alt_ah_attr = av;
  a.alt_port_num = 1;
  a.alt_timeout = 17;
  a.path_mig_state = IBV_MIG_MIGRATED;
  return a;
}

const char* type_name(ibv_qp_type type) {
  switch (type) {
    case IBV_QPT_RC:
      return "RC";
    case IBV_QPT_UC:
      return "UC";
    default:
      return "UD";
  }
}

class QpStateByType : public SimDevice, public ::testing::WithParamInterface<ibv_qp_type> {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    cq_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq_, nullptr);
    qp_ = create_qp(GetParam(), cq_, cq_);
    ASSERT_NE(qp_, nullptr);
  }

  int modify(ibv_qp_state to, int mask) {
    ibv_qp_attr a = attrs(to, address());
    return ibv_modify_qp(qp_, &a, IBV_QP_STATE | mask);
  }
  ibv_qp_type type() const { return GetParam(); }

  // Drives the QP from RESET to `target` along the usual path.
  void reach(ibv_qp_state target) {
    const ibv_qp_state path[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD};
    const int masks[] = {init_mask(type()), rtr_mask(type()), rts_mask(type()), 0};
    if (target == IBV_QPS_RESET) return;
    if (target == IBV_QPS_ERR) {
      ASSERT_EQ(modify(IBV_QPS_INIT, init_mask(type())), 0);
      ASSERT_EQ(modify(IBV_QPS_ERR, 0), 0);
      return;
    }
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(modify(path[i], masks[i]), 0) << "to " << path[i];
      if (path[i] == target) break;
    }
    ASSERT_EQ(state_of(qp_), target);
  }

  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(AllTypes, QpStateByType,
                         ::testing::Values(IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST_P(QpStateByType, NewQpIsInResetWithItsCreateAttributes) {
  EXPECT_EQ(qp_->state, IBV_QPS_RESET);
  EXPECT_EQ(qp_->qp_type, type());
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_CAP, &init), 0);
  EXPECT_EQ(attr.qp_state, IBV_QPS_RESET);
  EXPECT_EQ(init.qp_type, type());
  EXPECT_EQ(init.send_cq, cq_);
  EXPECT_EQ(init.recv_cq, cq_);
  EXPECT_GE(attr.cap.max_send_wr, 16u);
  EXPECT_GE(attr.cap.max_recv_wr, 16u);
  EXPECT_GE(attr.cap.max_send_sge, 4u);
  EXPECT_GE(attr.cap.max_recv_sge, 4u);
  EXPECT_GE(attr.cap.max_inline_data, 64u);
  EXPECT_EQ(init.cap.max_send_wr, attr.cap.max_send_wr);
}

TEST_P(QpStateByType, EveryLegalTransitionWithItsRequiredMaskSucceeds) {
  struct Step {
    ibv_qp_state to;
    int mask;
  };
  const Step steps[] = {
      {IBV_QPS_INIT, init_mask(type())},
      {IBV_QPS_INIT, 0},  // INIT -> INIT
      {IBV_QPS_RTR, rtr_mask(type())},
      {IBV_QPS_RTS, rts_mask(type())},
      {IBV_QPS_RTS, 0},  // RTS -> RTS
      {IBV_QPS_SQD, 0},
      {IBV_QPS_SQD, 0},  // SQD -> SQD
      {IBV_QPS_RTS, 0},
      {IBV_QPS_ERR, 0},
      {IBV_QPS_ERR, 0},
      {IBV_QPS_RESET, 0},
      {IBV_QPS_RESET, 0},
  };
  for (const Step& s : steps) {
    EXPECT_EQ(modify(s.to, s.mask), 0) << "to " << s.to;
    EXPECT_EQ(state_of(qp_), s.to);
    EXPECT_EQ(qp_->state, s.to);
  }
}

TEST_P(QpStateByType, OptionalAttributesOfEachTransitionAreAccepted) {
  const bool ud = type() == IBV_QPT_UD;
  const bool rc = type() == IBV_QPT_RC;
  ASSERT_EQ(modify(IBV_QPS_INIT, init_mask(type())), 0);
  // INIT -> INIT may change the path and the access rights / Q_Key.
  EXPECT_EQ(modify(IBV_QPS_INIT, init_mask(type())), 0);
  EXPECT_EQ(modify(IBV_QPS_RTR,
                   rtr_mask(type()) | IBV_QP_PKEY_INDEX | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)),
            0);
  // RTR -> RTS with IBV_QP_CUR_STATE matching the current state.
  ibv_qp_attr a = attrs(IBV_QPS_RTS, address());
  a.cur_qp_state = IBV_QPS_RTR;
  EXPECT_EQ(
      ibv_modify_qp(qp_, &a,
                    IBV_QP_STATE | IBV_QP_CUR_STATE | rts_mask(type()) |
                        (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS) | (rc ? IBV_QP_MIN_RNR_TIMER : 0)),
      0);
  EXPECT_EQ(state_of(qp_), IBV_QPS_RTS);
  // RTS -> RTS: an attribute change without a transition (no IBV_QP_STATE).
  a = attrs(IBV_QPS_RTS, address());
  a.qkey = 0x5678;
  a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
  a.min_rnr_timer = 20;
  const int change = ud   ? IBV_QP_QKEY
                     : rc ? IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER
                          : IBV_QP_ACCESS_FLAGS;
  ASSERT_EQ(ibv_modify_qp(qp_, &a, change), 0);
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp_, &q, change | IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
  if (ud) {
    EXPECT_EQ(q.qkey, 0x5678u);
  } else {
    EXPECT_EQ(q.qp_access_flags, static_cast<unsigned>(IBV_ACCESS_REMOTE_READ));
  }
  if (rc) {
    EXPECT_EQ(q.min_rnr_timer, 20);
  }
  // RTS -> SQD with the SQ-drained notification, which is the only optional one.
  EXPECT_EQ(modify(IBV_QPS_SQD, IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
}

TEST_P(QpStateByType, EachMissingRequiredAttributeIsEinval) {
  struct Step {
    ibv_qp_state to;
    int mask;
  };
  const Step steps[] = {{IBV_QPS_INIT, init_mask(type())},
                        {IBV_QPS_RTR, rtr_mask(type())},
                        {IBV_QPS_RTS, rts_mask(type())}};
  ibv_qp_state current = IBV_QPS_RESET;
  for (const Step& s : steps) {
    for (int bit = 1; bit != 0 && bit <= s.mask; bit <<= 1) {
      if (!(s.mask & bit)) continue;
      errno = 0;
      EXPECT_EQ(modify(s.to, s.mask & ~bit), EINVAL)
          << "to " << s.to << " without attribute bit 0x" << std::hex << bit;
      EXPECT_EQ(state_of(qp_), current);
    }
    ASSERT_EQ(modify(s.to, s.mask), 0);
    current = s.to;
  }
  // The state attribute itself: without IBV_QP_STATE nothing may move.
  ibv_qp_attr a = attrs(IBV_QPS_SQD);
  EXPECT_EQ(ibv_modify_qp(qp_, &a, IBV_QP_SQ_PSN), EINVAL);  // SQ_PSN: not for RTS -> RTS
  EXPECT_EQ(state_of(qp_), IBV_QPS_RTS);
}

TEST_P(QpStateByType, AttributeNotAllowedInTheTransitionIsEinval) {
  const bool ud = type() == IBV_QPT_UD;
  // RESET -> INIT: no destination, no PSN; UD has a Q_Key and no access flags.
  EXPECT_EQ(modify(IBV_QPS_INIT, init_mask(type()) | IBV_QP_DEST_QPN), EINVAL);
  EXPECT_EQ(modify(IBV_QPS_INIT, init_mask(type()) | IBV_QP_SQ_PSN), EINVAL);
  EXPECT_EQ(modify(IBV_QPS_INIT, init_mask(type()) | (ud ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY)),
            EINVAL);
  EXPECT_EQ(state_of(qp_), IBV_QPS_RESET);
  ASSERT_EQ(modify(IBV_QPS_INIT, init_mask(type())), 0);
  // INIT -> RTR: the send side is set up in RTR -> RTS.
  EXPECT_EQ(modify(IBV_QPS_RTR, rtr_mask(type()) | IBV_QP_SQ_PSN), EINVAL);
  EXPECT_EQ(modify(IBV_QPS_RTR, rtr_mask(type()) | IBV_QP_TIMEOUT), EINVAL);
  if (ud) {
    EXPECT_EQ(modify(IBV_QPS_RTR, IBV_QP_AV), EINVAL);  // UD has no fixed destination
  }
  if (type() == IBV_QPT_UC) {
    EXPECT_EQ(modify(IBV_QPS_RTR, rtr_mask(type()) | IBV_QP_MIN_RNR_TIMER), EINVAL);
  }
  // IBV_QP_CUR_STATE is not allowed out of INIT.
  ibv_qp_attr a = attrs(IBV_QPS_RTR, address());
  a.cur_qp_state = IBV_QPS_INIT;
  EXPECT_EQ(ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_CUR_STATE | rtr_mask(type())), EINVAL);
  EXPECT_EQ(state_of(qp_), IBV_QPS_INIT);
  ASSERT_EQ(modify(IBV_QPS_RTR, rtr_mask(type())), 0);
  // RTR -> RTS: the path MTU and the destination are fixed in RTR.
  EXPECT_EQ(modify(IBV_QPS_RTS, rts_mask(type()) | IBV_QP_PATH_MTU), EINVAL);
  EXPECT_EQ(modify(IBV_QPS_RTS, rts_mask(type()) | IBV_QP_DEST_QPN), EINVAL);
  if (type() != IBV_QPT_RC) {
    EXPECT_EQ(modify(IBV_QPS_RTS, rts_mask(type()) | IBV_QP_RETRY_CNT), EINVAL);
  }
  // IBV_QP_CUR_STATE that disagrees with the current state.
  a = attrs(IBV_QPS_RTS, address());
  a.cur_qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_CUR_STATE | rts_mask(type())), EINVAL);
  EXPECT_EQ(state_of(qp_), IBV_QPS_RTR);
  ASSERT_EQ(modify(IBV_QPS_RTS, rts_mask(type())), 0);
  // RTS -> RTS and to ERR / RESET take no PSN or destination.
  EXPECT_EQ(modify(IBV_QPS_RTS, IBV_QP_SQ_PSN), EINVAL);
  EXPECT_EQ(modify(IBV_QPS_ERR, IBV_QP_SQ_PSN), EINVAL);
  EXPECT_EQ(modify(IBV_QPS_RESET, IBV_QP_PORT), EINVAL);
  EXPECT_EQ(state_of(qp_), IBV_QPS_RTS);
}

TEST_P(QpStateByType, IllegalTransitionsAreEinval) {
  struct Case {
    ibv_qp_state from;
    ibv_qp_state to;
  };
  const Case cases[] = {
      {IBV_QPS_RESET, IBV_QPS_RTR}, {IBV_QPS_RESET, IBV_QPS_RTS}, {IBV_QPS_RESET, IBV_QPS_SQD},
      {IBV_QPS_INIT, IBV_QPS_RTS},  {IBV_QPS_INIT, IBV_QPS_SQD},  {IBV_QPS_RTR, IBV_QPS_RTR},
      {IBV_QPS_RTR, IBV_QPS_INIT},  {IBV_QPS_RTR, IBV_QPS_SQD},   {IBV_QPS_RTS, IBV_QPS_INIT},
      {IBV_QPS_RTS, IBV_QPS_RTR},   {IBV_QPS_RTS, IBV_QPS_SQE},   {IBV_QPS_SQD, IBV_QPS_RTR},
      {IBV_QPS_ERR, IBV_QPS_INIT},  {IBV_QPS_ERR, IBV_QPS_RTS},   {IBV_QPS_ERR, IBV_QPS_RTR},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(modify(IBV_QPS_RESET, 0), 0);
    reach(c.from);
    if (HasFatalFailure()) return;
    // The mask the target would need if the transition existed.
    const int mask = c.to == IBV_QPS_INIT  ? init_mask(type())
                     : c.to == IBV_QPS_RTR ? rtr_mask(type())
                     : c.to == IBV_QPS_RTS ? rts_mask(type())
                                           : 0;
    EXPECT_EQ(modify(c.to, mask), EINVAL) << c.from << " -> " << c.to;
    EXPECT_EQ(state_of(qp_), c.from) << c.from << " -> " << c.to;
  }
  // A state value outside enum ibv_qp_state.
  ASSERT_EQ(modify(IBV_QPS_RESET, 0), 0);
  EXPECT_EQ(modify(static_cast<ibv_qp_state>(42), 0), EINVAL);
}

TEST_P(QpStateByType, AnyStateCanGoToReset) {
  for (ibv_qp_state from :
       {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_ERR}) {
    reach(from);
    if (HasFatalFailure()) return;
    EXPECT_EQ(modify(IBV_QPS_RESET, 0), 0) << "from " << from;
    EXPECT_EQ(state_of(qp_), IBV_QPS_RESET);
  }
}

TEST_P(QpStateByType, AnyStateButResetCanGoToErr) {
  for (ibv_qp_state from : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_ERR}) {
    ASSERT_EQ(modify(IBV_QPS_RESET, 0), 0);
    reach(from);
    if (HasFatalFailure()) return;
    EXPECT_EQ(modify(IBV_QPS_ERR, 0), 0) << "from " << from;
    EXPECT_EQ(state_of(qp_), IBV_QPS_ERR);
  }
  // The kernel's transition table (ib_modify_qp_is_ok) has no RESET -> ERR.
  ASSERT_EQ(modify(IBV_QPS_RESET, 0), 0);
  EXPECT_EQ(modify(IBV_QPS_ERR, 0), EINVAL);
  EXPECT_EQ(state_of(qp_), IBV_QPS_RESET);
}

TEST_P(QpStateByType, QueryReportsTheAttributesSet) {
  ibv_qp_attr a = attrs(IBV_QPS_INIT, address());
  ASSERT_EQ(ibv_modify_qp(qp_, &a, IBV_QP_STATE | init_mask(type())), 0);
  a = attrs(IBV_QPS_RTR, address());
  a.dest_qp_num = 0xabcde;
  a.path_mtu = IBV_MTU_512;
  a.min_rnr_timer = 7;
  a.rq_psn = 0x123;
  ASSERT_EQ(ibv_modify_qp(qp_, &a, IBV_QP_STATE | rtr_mask(type())), 0);
  a = attrs(IBV_QPS_RTS, address());
  a.timeout = 21;
  a.retry_cnt = 4;
  a.rnr_retry = 6;
  a.sq_psn = 0x456;
  ASSERT_EQ(ibv_modify_qp(qp_, &a, IBV_QP_STATE | rts_mask(type())), 0);

  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(
      ibv_query_qp(qp_, &q,
                   IBV_QP_STATE | IBV_QP_CAP | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_SQ_PSN |
                       rtr_mask(type()) | rts_mask(type()) | init_mask(type()),
                   &init),
      0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(q.port_num, 1);
  EXPECT_EQ(q.pkey_index, 0);
  EXPECT_EQ(q.sq_psn, 0x456u);
  EXPECT_GE(q.cap.max_send_wr, 16u);
  EXPECT_GE(q.cap.max_recv_sge, 4u);
  EXPECT_GE(q.cap.max_inline_data, 64u);
  if (type() == IBV_QPT_UD) {
    EXPECT_EQ(q.qkey, 0x1234u);
    return;
  }
  EXPECT_EQ(q.dest_qp_num, 0xabcdeu);
  EXPECT_EQ(q.path_mtu, IBV_MTU_512);
  EXPECT_EQ(q.rq_psn, 0x123u);
  EXPECT_EQ(q.ah_attr.dlid, lid());
  EXPECT_EQ(q.ah_attr.port_num, 1);
  EXPECT_EQ(q.qp_access_flags,
            static_cast<unsigned>(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
  if (type() == IBV_QPT_RC) {
    EXPECT_EQ(q.timeout, 21);
    EXPECT_EQ(q.retry_cnt, 4);
    EXPECT_EQ(q.rnr_retry, 6);
    EXPECT_EQ(q.min_rnr_timer, 7);
    EXPECT_EQ(q.max_dest_rd_atomic, 4);
    EXPECT_EQ(q.max_rd_atomic, 2);
  }
}

// ---- out-of-range attribute values (RC: it takes the most attributes) ------

struct OutOfRange {
  const char* name;
  ibv_qp_state from;  // state the QP is in
  ibv_qp_state to;
  int attr;  // the attribute that gets the bad value
  void (*set)(ibv_qp_attr&);
};

void PrintTo(const OutOfRange& c, std::ostream* os) {
  *os << c.name;
}

class QpAttributeRange : public SimDevice, public ::testing::WithParamInterface<OutOfRange> {};

const OutOfRange kOutOfRange[] = {
    {"Port2", IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PORT, [](ibv_qp_attr& a) { a.port_num = 2; }},
    {"Port0", IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PORT, [](ibv_qp_attr& a) { a.port_num = 0; }},
    {"PkeyIndexBeyondTable", IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX,
     [](ibv_qp_attr& a) { a.pkey_index = 0xffff; }},
    {"PathMtu0", IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_PATH_MTU,
     [](ibv_qp_attr& a) { a.path_mtu = static_cast<ibv_mtu>(0); }},
    {"PathMtu6", IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_PATH_MTU,
     [](ibv_qp_attr& a) { a.path_mtu = static_cast<ibv_mtu>(6); }},
    {"DestQpnOver24Bits", IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_DEST_QPN,
     [](ibv_qp_attr& a) { a.dest_qp_num = 0x1000000; }},
    {"RqPsnOver24Bits", IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_RQ_PSN,
     [](ibv_qp_attr& a) { a.rq_psn = 0x1000000; }},
    {"MinRnrTimer32", IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_MIN_RNR_TIMER,
     [](ibv_qp_attr& a) { a.min_rnr_timer = 32; }},
    {"MaxDestRdAtomicAboveDevice", IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_MAX_DEST_RD_ATOMIC,
     [](ibv_qp_attr& a) { a.max_dest_rd_atomic = 255; }},
    {"AvPort2", IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_AV,
     [](ibv_qp_attr& a) { a.ah_attr.port_num = 2; }},
    {"Timeout32", IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_TIMEOUT, [](ibv_qp_attr& a) { a.timeout = 32; }},
    {"RetryCnt8", IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_RETRY_CNT,
     [](ibv_qp_attr& a) { a.retry_cnt = 8; }},
    {"RnrRetry8", IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_RNR_RETRY,
     [](ibv_qp_attr& a) { a.rnr_retry = 8; }},
    {"SqPsnOver24Bits", IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN,
     [](ibv_qp_attr& a) { a.sq_psn = 0x1000000; }},
    {"MaxRdAtomicAboveDevice", IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_MAX_QP_RD_ATOMIC,
     [](ibv_qp_attr& a) { a.max_rd_atomic = 255; }},
};

INSTANTIATE_TEST_SUITE_P(Table, QpAttributeRange, ::testing::ValuesIn(kOutOfRange),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_P(QpAttributeRange, OutOfRangeValueIsEinvalAndChangesNothing) {
  const OutOfRange& c = GetParam();
  ibv_cq* cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp* qp = create_qp(IBV_QPT_RC, cq, cq);
  ASSERT_NE(qp, nullptr);
  const int masks[] = {init_mask(IBV_QPT_RC), rtr_mask(IBV_QPT_RC), rts_mask(IBV_QPT_RC)};
  const ibv_qp_state states[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
  for (int i = 0; i < 3 && states[i] <= c.from; ++i) {
    ibv_qp_attr a = attrs(states[i], address());
    ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | masks[i]), 0);
  }
  ASSERT_EQ(state_of(qp), c.from);
  const int mask = c.to == IBV_QPS_INIT ? masks[0] : c.to == IBV_QPS_RTR ? masks[1] : masks[2];
  ASSERT_TRUE(mask & c.attr);
  ibv_qp_attr bad = attrs(c.to, address());
  c.set(bad);
  EXPECT_EQ(ibv_modify_qp(qp, &bad, IBV_QP_STATE | mask), EINVAL);
  EXPECT_EQ(state_of(qp), c.from);
  // A failed modify changes no attribute: the same transition with valid
  // values then succeeds and the query shows the valid values.
  ibv_qp_attr good = attrs(c.to, address());
  ASSERT_EQ(ibv_modify_qp(qp, &good, IBV_QP_STATE | mask), 0);
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE | mask, &init), 0);
  EXPECT_EQ(q.qp_state, c.to);
  EXPECT_EQ(q.port_num, 1);
  if (c.to == IBV_QPS_RTS) {
    EXPECT_EQ(q.timeout, good.timeout);
    EXPECT_EQ(q.retry_cnt, good.retry_cnt);
    EXPECT_EQ(q.rnr_retry, good.rnr_retry);
  }
  ASSERT_EQ(ibv_destroy_qp(qp), 0);
  ASSERT_EQ(ibv_destroy_cq(cq), 0);
}

// ---- ibv_create_qp(3) ------------------------------------------------------

class CreateQp : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    cq_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq_, nullptr);
    ASSERT_EQ(ibv_query_device(ctx_, &device_attr_), 0);
  }
  ibv_qp_init_attr init(ibv_qp_type type) {
    ibv_qp_init_attr i{};
    i.send_cq = cq_;
    i.recv_cq = cq_;
    i.qp_type = type;
    i.cap.max_send_wr = 8;
    i.cap.max_recv_wr = 8;
    i.cap.max_send_sge = 1;
    i.cap.max_recv_sge = 1;
    return i;
  }
  void expect_fails(ibv_qp_init_attr i, int err, const char* what) {
    errno = 0;
    ibv_qp* qp = ibv_create_qp(pd_, &i);
    EXPECT_EQ(qp, nullptr) << what;
    EXPECT_EQ(errno, err) << what;
    if (qp != nullptr) ibv_destroy_qp(qp);
  }
  ibv_cq* cq_ = nullptr;
  ibv_device_attr device_attr_{};
};

TEST_F(CreateQp, CapabilitiesAboveDeviceLimitsAreEinval) {
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
    ibv_qp_init_attr i = init(type);
    i.cap.max_send_wr = static_cast<uint32_t>(device_attr_.max_qp_wr) + 1;
    expect_fails(i, EINVAL, "max_send_wr");
    i = init(type);
    i.cap.max_recv_wr = static_cast<uint32_t>(device_attr_.max_qp_wr) + 1;
    expect_fails(i, EINVAL, "max_recv_wr");
    i = init(type);
    i.cap.max_send_sge = static_cast<uint32_t>(device_attr_.max_sge) + 1;
    expect_fails(i, EINVAL, "max_send_sge");
    i = init(type);
    i.cap.max_recv_sge = static_cast<uint32_t>(device_attr_.max_sge) + 1;
    expect_fails(i, EINVAL, "max_recv_sge");
    i = init(type);
    i.cap.max_inline_data = 1u << 30;
    expect_fails(i, EINVAL, "max_inline_data");
  }
  // Exactly at the limits is fine.
  ibv_qp_init_attr i = init(IBV_QPT_RC);
  i.cap.max_send_wr = static_cast<uint32_t>(device_attr_.max_qp_wr);
  i.cap.max_send_sge = static_cast<uint32_t>(device_attr_.max_sge);
  ibv_qp* qp = ibv_create_qp(pd_, &i);
  ASSERT_NE(qp, nullptr);
  EXPECT_GE(i.cap.max_send_wr, static_cast<uint32_t>(device_attr_.max_qp_wr));
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(CreateQp, UcWithSrqIsEinval) {
  ibv_srq_init_attr srq_init{};
  srq_init.attr.max_wr = 8;
  srq_init.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &srq_init);
  ASSERT_NE(srq, nullptr);
  ibv_qp_init_attr i = init(IBV_QPT_UC);
  i.srq = srq;
  expect_fails(i, EINVAL, "UC with SRQ");
  // RC and UD may use it.
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UD}) {
    i = init(type);
    i.srq = srq;
    ibv_qp* qp = ibv_create_qp(pd_, &i);
    ASSERT_NE(qp, nullptr);
    EXPECT_EQ(qp->srq, srq);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
  }
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

TEST_F(CreateQp, UnsupportedTypeIsEopnotsupp) {
  expect_fails(init(IBV_QPT_RAW_PACKET), EOPNOTSUPP, "RAW_PACKET");
}

TEST_F(CreateQp, QpNumbersAreUniqueAcrossQpsAndContexts) {
  std::set<uint32_t> numbers;
  std::vector<ibv_qp*> qps;
  for (int n = 0; n < 8; ++n)
    for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
      ibv_qp_init_attr i = init(type);
      ibv_qp* qp = ibv_create_qp(pd_, &i);
      ASSERT_NE(qp, nullptr);
      EXPECT_EQ(state_of(qp), IBV_QPS_RESET);
      EXPECT_TRUE(numbers.insert(qp->qp_num).second) << "duplicate qp_num " << qp->qp_num;
      EXPECT_LE(qp->qp_num, 0xffffffu);
      EXPECT_GT(qp->qp_num, 1u);  // 0 and 1 are the special QPs
      qps.push_back(qp);
    }
  // A second context of the same device shares the QPN space.
  ibv_context* other = ibv_open_device(device_);
  ASSERT_NE(other, nullptr);
  ibv_pd* pd = ibv_alloc_pd(other);
  ibv_cq* cq = ibv_create_cq(other, 4, nullptr, nullptr, 0);
  ASSERT_NE(pd, nullptr);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr i = init(IBV_QPT_RC);
  i.send_cq = i.recv_cq = cq;
  ibv_qp* qp = ibv_create_qp(pd, &i);
  ASSERT_NE(qp, nullptr);
  EXPECT_TRUE(numbers.insert(qp->qp_num).second);
  ibv_close_device(other);
  for (ibv_qp* q : qps) EXPECT_EQ(ibv_destroy_qp(q), 0);
}

}  // namespace
}  // namespace verbfault::testing

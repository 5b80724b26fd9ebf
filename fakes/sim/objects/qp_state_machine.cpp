#include "qp_state_machine.h"

#include <cerrno>

namespace verbfault::sim {

namespace {

// Per QP type, in the order of the table columns below.
struct ByType {
  int rc;
  int uc;
  int ud;
};

int pick(const ByType& masks, ibv_qp_type type) {
  switch (type) {
    case IBV_QPT_RC:
      return masks.rc;
    case IBV_QPT_UC:
      return masks.uc;
    default:
      return masks.ud;
  }
}

struct Rule {
  ibv_qp_state from;
  ibv_qp_state to;
  ByType required;
  ByType optional;
};

constexpr int kPath = IBV_QP_PKEY_INDEX | IBV_QP_PORT;

// IBA 10.3.1 / ib_modify_qp(3): transitions other than to RESET and ERR.
constexpr Rule kRules[] = {
    {IBV_QPS_RESET,
     IBV_QPS_INIT,
     {kPath | IBV_QP_ACCESS_FLAGS, kPath | IBV_QP_ACCESS_FLAGS, kPath | IBV_QP_QKEY},
     {0, 0, 0}},
    {IBV_QPS_INIT,
     IBV_QPS_INIT,
     {0, 0, 0},
     {kPath | IBV_QP_ACCESS_FLAGS, kPath | IBV_QP_ACCESS_FLAGS, kPath | IBV_QP_QKEY}},
    {IBV_QPS_INIT,
     IBV_QPS_RTR,
     {IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
          IBV_QP_MIN_RNR_TIMER,
      IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, 0},
     {IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
      IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX | IBV_QP_QKEY}},
    {IBV_QPS_RTR,
     IBV_QPS_RTS,
     {IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
          IBV_QP_MAX_QP_RD_ATOMIC,
      IBV_QP_SQ_PSN, IBV_QP_SQ_PSN},
     {IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
          IBV_QP_PATH_MIG_STATE,
      IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE,
      IBV_QP_CUR_STATE | IBV_QP_QKEY}},
    {IBV_QPS_RTS,
     IBV_QPS_RTS,
     {0, 0, 0},
     {IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
          IBV_QP_MIN_RNR_TIMER,
      IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE,
      IBV_QP_CUR_STATE | IBV_QP_QKEY}},
    {IBV_QPS_RTS,
     IBV_QPS_SQD,
     {0, 0, 0},
     {IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY}},
    {IBV_QPS_SQD,
     IBV_QPS_RTS,
     {0, 0, 0},
     {IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
          IBV_QP_PATH_MIG_STATE,
      IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE,
      IBV_QP_CUR_STATE | IBV_QP_QKEY}},
    {IBV_QPS_SQD,
     IBV_QPS_SQD,
     {0, 0, 0},
     {IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
          IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH |
          IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
      IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
      IBV_QP_PKEY_INDEX | IBV_QP_QKEY}},
    {IBV_QPS_SQE,
     IBV_QPS_RTS,
     {0, 0, 0},
     {0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, IBV_QP_CUR_STATE | IBV_QP_QKEY}},
};

}  // namespace

QpTransition qp_transition(ibv_qp_type type, ibv_qp_state from, ibv_qp_state to) {
  // Any state may go to RESET with no other attribute, and any but RESET
  // to ERR (IBA 10.3.1: a QP in RESET has no work to flush).
  if (to == IBV_QPS_RESET) return {true, 0, 0};
  if (to == IBV_QPS_ERR) return {from != IBV_QPS_RESET, 0, 0};
  for (const Rule& rule : kRules) {
    if (rule.from != from || rule.to != to) continue;
    // SQE exists only for UC and UD (an RC QP never enters it).
    if (from == IBV_QPS_SQE && type == IBV_QPT_RC) return {};
    return {true, pick(rule.required, type), pick(rule.optional, type)};
  }
  return {};
}

int check_qp_modify(ibv_qp_type type, ibv_qp_state current, ibv_qp_state target, int attr_mask) {
  // IBV_QP_CUR_STATE only makes sense where the device could disagree
  // about the current state: RTR, RTS, SQD, SQE.
  if ((attr_mask & IBV_QP_CUR_STATE) &&
      (current == IBV_QPS_RESET || current == IBV_QPS_INIT || current == IBV_QPS_ERR))
    return EINVAL;
  QpTransition t = qp_transition(type, current, target);
  if (!t.valid) return EINVAL;
  int given = attr_mask & ~IBV_QP_STATE;
  if ((given & t.required) != t.required) return EINVAL;
  if ((given & ~(t.required | t.optional)) != 0) return EINVAL;
  return 0;
}

}  // namespace verbfault::sim

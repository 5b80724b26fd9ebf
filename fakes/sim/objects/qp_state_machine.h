// The QP state machine of IBA 10.3.1, with the attribute masks that each
// transition requires and allows (ibv_modify_qp(3)).
#pragma once

#include <infiniband/verbs.h>

namespace verbfault::sim {

struct QpTransition {
  bool valid = false;
  int required = 0;  // IBV_QP_* bits that must be in attr_mask
  int optional = 0;  // IBV_QP_* bits that may be in attr_mask
};

// The rule for moving a QP of `type` from `from` to `to`. IBV_QP_STATE is
// implied in both masks.
QpTransition qp_transition(ibv_qp_type type, ibv_qp_state from, ibv_qp_state to);

// 0 if attr_mask is a legal modify of a QP in `current`, else EINVAL.
// `target` is the new state (the current one when IBV_QP_STATE is absent:
// an attribute change without a transition, e.g. RTS -> RTS).
int check_qp_modify(ibv_qp_type type, ibv_qp_state current, ibv_qp_state target, int attr_mask);

}  // namespace verbfault::sim

// The interposer's ibv_create_qp_ex (the verbs_context op) and the ibv_wr_*
// trampolines it installs into each QP it returns
// (extended_qp_trampolines.cpp).
#pragma once

#include <infiniband/verbs.h>

namespace verbfault::interposer {

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);

}  // namespace verbfault::interposer

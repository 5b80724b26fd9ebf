// The interposer's ibv_create_cq_ex (the verbs_context op) and the poll
// trampolines it installs into each extended CQ it returns
// (extended_cq_trampolines.cpp).
#pragma once

#include <infiniband/verbs.h>

namespace verbfault::interposer {

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr);

}  // namespace verbfault::interposer

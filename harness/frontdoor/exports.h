// Shared pieces of the exported ibv_* front door: each export forwards to
// the interposer's function for its verb (interposer/calls.h), or to its
// event hooks (interposer.h).
#pragma once

#include "calls.h"
#include "interposer.h"

#include <infiniband/verbs.h>

// verbs.h puts macros in front of some exported functions (over inline
// functions or versioned names); the exports define the functions of
// those names, as libibverbs does.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

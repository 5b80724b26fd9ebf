// ibv_create_cq_ex(3) on the simulated device: the extended CQ and its poll
// API (ibv_start_poll / ibv_next_poll / ibv_end_poll and the
// ibv_wc_read_* accessors). The CQ underneath is the ordinary
// CompletionQueue (every simulated CQ is allocated as an ibv_cq_ex), so
// events, overflow, freedoms and destroy are the same as for ibv_create_cq.
#pragma once

#include <infiniband/verbs.h>

namespace verbfault::sim {

// The verbs_context op behind the inline ibv_create_cq_ex(). Fields that a
// plain ibv_wc carries can be asked for in wc_flags; anything else
// (timestamps, flow tag, TM info, parent domain, unknown flags) fails with
// EOPNOTSUPP, as providers report what they do not support.
ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr);

}  // namespace verbfault::sim

// ibv_create_qp_ex(3) and the ibv_wr_* post API (ibv_wr_post(3)) on the
// simulated device. The QP underneath is the ordinary QueuePair (every
// simulated QP is allocated as an ibv_qp_ex); the builders and setters
// collect a WrBatch, and ibv_wr_complete posts it through the same send
// queue as ibv_post_send, all of it or none.
#pragma once

#include <infiniband/verbs.h>

namespace verbfault::sim {

// The verbs_context op behind the inline ibv_create_qp_ex() (which calls
// it for any comp_mask beyond IBV_QP_INIT_ATTR_PD). Supported: PD, send
// ops (SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ,
// both atomics, each on the QP types that allow it) and create_flags 0;
// anything else fails with EOPNOTSUPP.
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);

}  // namespace verbfault::sim

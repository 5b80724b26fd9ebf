// rc_connect: the connect sequence of a reliable-connected QP for tests.
//
// Every test that needs a connected RC pair moves each QP from RESET through
// INIT and RTR to RTS with ibv_modify_qp(3). This header does it once:
//
//   ASSERT_EQ(rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = lid}), 0);
//   ASSERT_EQ(rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = lid}), 0);
//
// What a test varies goes in RcConnectOptions (designated initializers, in
// the order the fields are declared); everything else keeps its default.
//
// The calls it makes: exactly one ibv_modify_qp per transition, nothing else
// (no ibv_query_qp, no ibv_query_port), so that a fault rule counting calls
// on a QP ("nth=4": three modify_qp to connect it, then the post) counts the
// same as with the sequence written out.
//
// The masks are the required attributes of ibv_modify_qp(3), NOTES, "the
// minimum list of attributes that must be changed upon transitioning QP
// state from: Reset --> Init --> RTR --> RTS" (the state diagram is IBA
// Vol. 1, 10.3.1; the kernel checks the same table in ib_modify_qp_is_ok).
// No optional attribute is set. For IBV_QPT_RC:
//
//   RESET -> INIT  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
//                  IBV_QP_ACCESS_FLAGS
//                  pkey_index, port_num and qp_access_flags: the partition
//                  and the port the QP uses, and which remote operations it
//                  accepts as a responder (RDMA WRITE / READ / atomics).
//   INIT -> RTR    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
//                  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
//                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
//                  The receive side: the remote end (ah_attr.dlid at the
//                  local port ah_attr.port_num, dest_qp_num), the path MTU,
//                  the first PSN expected, how many RDMA READ / atomic
//                  requests it serves at once, and the RNR NAK delay it
//                  asks a sender to wait when no receive is posted.
//   RTR -> RTS     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
//                  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
//                  IBV_QP_MAX_QP_RD_ATOMIC
//                  The send side: the first PSN sent, the local ACK timeout
//                  (4.096 us * 2^timeout), the transport retries and the
//                  RNR retries (7: without limit, IBA 9.7.5.2.8) before a
//                  WR fails, and how many RDMA READ / atomic requests it
//                  has outstanding.
//
// An IBV_QPT_UC QP (unreliable connected: no ACKs, no retries, no RDMA READ
// or atomics) gets the UC rows of the same table: the masks above without
// IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER, IBV_QP_TIMEOUT,
// IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY and IBV_QP_MAX_QP_RD_ATOMIC (those
// values are then ignored).
//
// Only an include path comes with the CMake target verbfault_testing: the
// test links libverbfault.so (or libibverbs) itself.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>

namespace verbfault::testing {

// What rc_connect sets, in the order of the transitions. The defaults are a
// plain connection on port 1 of a simulated device: every remote access,
// one outstanding RDMA READ / atomic each way, PSNs 0, and retries that
// give up late (retry_cnt 7, rnr_retry 7 = without limit).
struct RcConnectOptions {
  // The remote end, used from INIT -> RTR on: its QP number and the LID of
  // its port (the primary path's address vector).
  uint32_t dest_qp_num = 0;
  uint16_t dlid = 0;
  // The path's GRH: left all zero (dgid ::), the path has none
  // (ah_attr.is_global 0); set, the remote end is addressed by grh.dgid
  // from the local GID grh.sgid_index, as a RoCE port requires (IBTA Annex
  // A17.4: no LIDs; ibv_modify_qp fails a RoCE path without a GRH with
  // EINVAL).
  ibv_global_route grh{};

  // RESET -> INIT. port_num is the local port, both for the QP
  // (IBV_QP_PORT) and for its path (ah_attr.port_num at INIT -> RTR).
  uint8_t port_num = 1;
  uint16_t pkey_index = 0;
  int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

  // INIT -> RTR.
  ibv_mtu path_mtu = IBV_MTU_1024;
  uint32_t rq_psn = 0;
  uint8_t max_dest_rd_atomic = 1;
  uint8_t min_rnr_timer = 12;  // 12: 0.64 ms (the encoding of IBA 9.7.5.2.8)

  // RTR -> RTS.
  uint32_t sq_psn = 0;
  uint8_t timeout = 14;  // 4.096 us * 2^14: about 67 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t max_rd_atomic = 1;

  // Which transitions: those after `from` (the state the QP is in) up to
  // and including `stop_at`. A test that stops at INIT or RTR sets
  // stop_at; one that looks at the QP between two steps calls again with
  // `from` where the previous call stopped.
  ibv_qp_state from = IBV_QPS_RESET;
  ibv_qp_state stop_at = IBV_QPS_RTS;

  // The ibv_modify_qp to call: the one the test binds to, unless the test
  // calls a particular library's (e.g. a provider's, found with dlvsym).
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int) = &ibv_modify_qp;
};

// Moves the RC (or UC) QP `qp` along RESET -> INIT -> RTR -> RTS as `o`
// says. Returns 0, or what the first failing ibv_modify_qp returned (its
// errno value, ibv_modify_qp(3) RETURN VALUE): the transitions after it are
// not attempted, and the QP stays in the state that call left it in.
// Returns EINVAL without calling anything when qp is neither RC nor UC, or
// when from / stop_at name no forward step (from must be RESET, INIT or
// RTR, stop_at INIT, RTR or RTS, and from before stop_at).
inline int rc_connect(ibv_qp* qp, const RcConnectOptions& o) {
  const bool rc = qp->qp_type == IBV_QPT_RC;
  if (!rc && qp->qp_type != IBV_QPT_UC) return EINVAL;
  if (o.from < IBV_QPS_RESET || o.stop_at > IBV_QPS_RTS || o.from >= o.stop_at) return EINVAL;

  if (o.from < IBV_QPS_INIT) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = o.pkey_index;
    a.port_num = o.port_num;
    a.qp_access_flags = static_cast<unsigned int>(o.access);
    const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    if (const int err = o.modify_qp(qp, &a, mask)) return err;
  }
  if (o.stop_at == IBV_QPS_INIT) return 0;

  if (o.from < IBV_QPS_RTR) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = o.path_mtu;
    a.dest_qp_num = o.dest_qp_num;
    a.rq_psn = o.rq_psn;
    a.max_dest_rd_atomic = o.max_dest_rd_atomic;
    a.min_rnr_timer = o.min_rnr_timer;
    a.ah_attr.dlid = o.dlid;
    a.ah_attr.port_num = o.port_num;
    const ibv_gid& dgid = o.grh.dgid;
    if (dgid.global.subnet_prefix != 0 || dgid.global.interface_id != 0) {
      a.ah_attr.is_global = 1;
      a.ah_attr.grh = o.grh;
    }
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (rc) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    if (const int err = o.modify_qp(qp, &a, mask)) return err;
  }
  if (o.stop_at == IBV_QPS_RTR) return 0;

  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = o.sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (rc) mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  return o.modify_qp(qp, &a, mask);
}

}  // namespace verbfault::testing

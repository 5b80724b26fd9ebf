// INIT_QP_ATTR: the attributes that move an id's QP to INIT, RTR and RTS
// (rdma_init_qp_attr, cma_ib_init_qp_attr; cm.c cm_init_qp_*_attr).
// librdmacm passes them to ibv_modify_qp as they come: rdma_create_qp (INIT),
// rdma_accept and the CONNECT_RESPONSE (RTR, RTS).
#include "cm_addresses.h"
#include "connection_manager.h"
#include "device.h"
#include "fabric.h"
#include "user_memory.h"

#include <rdma/ib_user_verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace verbfault::sim::cm {

int ConnectionManager::init_qp_attr(int fd, const rdma_ucm_init_qp_attr& command, uint16_t out) {
  if (out < sizeof(ib_uverbs_qp_attr)) return ENOSPC;
  int error = 0;
  CmId* id = find_with_device(fd, command.id, error);
  if (id == nullptr) return error;
  if (command.qp_state > IBV_QPS_ERR) return EINVAL;
  const Device& device = device_at(*id->source.device);
  ib_uverbs_qp_attr response{};
  response.qp_state = command.qp_state;
  uint32_t mask = IBV_QP_STATE;
  if (!id->cm_id || id->qp_type == IBV_QPT_UD || id->connection == ConnectionState::kNone) {
    // cma_ib_init_qp_attr, whatever the state asked: the port and P_Key,
    // and no remote access yet (RC) or the default qkey (UD).
    if (id->cm_id && id->qp_type != IBV_QPT_UD) return EINVAL;  // a reset connection
    response.pkey_index = 0;
    response.port_num = id->source.port;
    mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (id->qp_type == IBV_QPT_UD) {
      response.qkey = kDefaultQkey;
      mask |= IBV_QP_QKEY;
    } else {
      response.qp_access_flags = 0;
      mask |= IBV_QP_ACCESS_FLAGS;
    }
  } else {
    // ib_cm_init_qp_attr: by the IB CM state.
    const ConnectionState state = id->connection;
    const bool connecting =
        state == ConnectionState::kReqReceived || state == ConnectionState::kRepSent ||
        state == ConnectionState::kRepReceived || state == ConnectionState::kEstablished;
    switch (command.qp_state) {
      case IBV_QPS_INIT:
        if (!connecting && state != ConnectionState::kReqSent) return EINVAL;
        response.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (id->responder_resources != 0)
          response.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        response.pkey_index = 0;
        response.port_num = id->source.port;
        mask |= IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        break;
      case IBV_QPS_RTR: {
        if (!connecting || !id->path) return EINVAL;
        ib_uverbs_ah_attr& ah = response.ah_attr;
        ah.port_num = id->source.port;
        if (device.ethernet()) {
          ah.is_global = 1;
          std::memcpy(ah.grh.dgid, id->path->dgid.raw, sizeof id->path->dgid.raw);
          ah.grh.sgid_index = static_cast<uint8_t>(
              std::max(0, device.find_gid(source_gid(device, id->source.address))));
          ah.grh.hop_limit = id->path->hop_limit;
          ah.grh.traffic_class = id->tos.value_or(0);
        } else {
          ah.dlid = id->path->dlid;
        }
        response.path_mtu = id->path->mtu;
        response.dest_qp_num = id->remote_qpn;
        response.max_dest_rd_atomic = id->responder_resources;
        response.min_rnr_timer = 0;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        break;
      }
      case IBV_QPS_RTS:
        if (!connecting || !id->path) return EINVAL;
        response.sq_psn = id->remote_psn;
        response.retry_cnt = id->retry_count;
        response.rnr_retry = id->rnr_retry_count;
        response.max_rd_atomic = id->initiator_depth;
        response.timeout = id->path->ack_timeout();
        mask |= IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                IBV_QP_TIMEOUT;
        break;
      default:
        return EINVAL;
    }
  }
  // rdma_init_qp_attr: RTR's receive PSN is the id's own (the starting PSN
  // it told the peer), flagged or not; ack_timeout overrides the timeout.
  if (command.qp_state == IBV_QPS_RTR) response.rq_psn = id->seq_num;
  if ((mask & IBV_QP_TIMEOUT) != 0 && id->ack_timeout) response.timeout = *id->ack_timeout;
  response.qp_attr_mask = mask;
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  return 0;
}

}  // namespace verbfault::sim::cm

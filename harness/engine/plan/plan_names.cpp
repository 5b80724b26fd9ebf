#include "plan_names.h"

#include "fault_kinds.h"

#include <cerrno>
#include <charconv>
#include <cstdio>

namespace verbfault {

namespace engine {

// The tables are never destroyed: names are still needed by exit handlers
// (the end-of-run report may run after static destructors have).

const std::vector<Named<FaultKind>>& fault_kind_names() {
  static const auto& table = *[] {
    auto* names = new std::vector<Named<FaultKind>>();
    for (const FaultKindInfo& kind : fault_kinds()) names->push_back({kind.kind, kind.name});
    return names;
  }();
  return table;
}

const std::vector<Named<ObjectKind>>& object_kind_names() {
  static const auto& table = *new std::vector<Named<ObjectKind>>{
      {ObjectKind::context, "context"}, {ObjectKind::pd, "pd"},
      {ObjectKind::mr, "mr"},           {ObjectKind::cq, "cq"},
      {ObjectKind::srq, "srq"},         {ObjectKind::qp, "qp"},
      {ObjectKind::ah, "ah"},           {ObjectKind::channel, "channel"},
      {ObjectKind::thread, "thread"},   {ObjectKind::cm_id, "cm_id"},
  };
  return table;
}

const std::vector<Named<Opcode>>& opcode_names() {
  static const auto& table = *new std::vector<Named<Opcode>>{
      {Opcode::send, "send"},
      {Opcode::send_with_imm, "send_with_imm"},
      {Opcode::rdma_write, "rdma_write"},
      {Opcode::rdma_write_with_imm, "rdma_write_with_imm"},
      {Opcode::rdma_read, "rdma_read"},
      {Opcode::atomic_cmp_and_swp, "atomic_cmp_and_swp"},
      {Opcode::atomic_fetch_and_add, "atomic_fetch_and_add"},
      {Opcode::recv, "recv"},
      {Opcode::recv_rdma_with_imm, "recv_rdma_with_imm"},
  };
  return table;
}

const std::vector<Named<Verb>>& verb_names() {
  static const auto& table = *new std::vector<Named<Verb>>{
      {Verb::alloc_pd, "alloc_pd"},
      {Verb::reg_mr, "reg_mr"},
      {Verb::create_cq, "create_cq"},
      {Verb::resize_cq, "resize_cq"},
      {Verb::create_comp_channel, "create_comp_channel"},
      {Verb::create_srq, "create_srq"},
      {Verb::modify_srq, "modify_srq"},
      {Verb::create_qp, "create_qp"},
      {Verb::modify_qp, "modify_qp"},
      {Verb::create_ah, "create_ah"},
      {Verb::post_send, "post_send"},
      {Verb::post_recv, "post_recv"},
      {Verb::post_srq_recv, "post_srq_recv"},
      {Verb::req_notify_cq, "req_notify_cq"},
      {Verb::poll_cq, "poll_cq"},
  };
  return table;
}

const std::vector<Named<Side>>& side_names() {
  static const auto& table =
      *new std::vector<Named<Side>>{{Side::send, "send"}, {Side::recv, "recv"}};
  return table;
}

const std::vector<Named<ibv_qp_type>>& qp_type_names() {
  static const auto& table = *new std::vector<Named<ibv_qp_type>>{
      {IBV_QPT_RC, "rc"}, {IBV_QPT_UC, "uc"}, {IBV_QPT_UD, "ud"}};
  return table;
}

const std::vector<Named<ibv_wc_status>>& status_names() {
  static const auto& table = *new std::vector<Named<ibv_wc_status>>{
      {IBV_WC_SUCCESS, "success"},
      {IBV_WC_LOC_LEN_ERR, "loc_len_err"},
      {IBV_WC_LOC_QP_OP_ERR, "loc_qp_op_err"},
      {IBV_WC_LOC_EEC_OP_ERR, "loc_eec_op_err"},
      {IBV_WC_LOC_PROT_ERR, "loc_prot_err"},
      {IBV_WC_WR_FLUSH_ERR, "wr_flush_err"},
      {IBV_WC_MW_BIND_ERR, "mw_bind_err"},
      {IBV_WC_BAD_RESP_ERR, "bad_resp_err"},
      {IBV_WC_LOC_ACCESS_ERR, "loc_access_err"},
      {IBV_WC_REM_INV_REQ_ERR, "rem_inv_req_err"},
      {IBV_WC_REM_ACCESS_ERR, "rem_access_err"},
      {IBV_WC_REM_OP_ERR, "rem_op_err"},
      {IBV_WC_RETRY_EXC_ERR, "retry_exc_err"},
      {IBV_WC_RNR_RETRY_EXC_ERR, "rnr_retry_exc_err"},
      {IBV_WC_LOC_RDD_VIOL_ERR, "loc_rdd_viol_err"},
      {IBV_WC_REM_INV_RD_REQ_ERR, "rem_inv_rd_req_err"},
      {IBV_WC_REM_ABORT_ERR, "rem_abort_err"},
      {IBV_WC_INV_EECN_ERR, "inv_eecn_err"},
      {IBV_WC_INV_EEC_STATE_ERR, "inv_eec_state_err"},
      {IBV_WC_FATAL_ERR, "fatal_err"},
      {IBV_WC_RESP_TIMEOUT_ERR, "resp_timeout_err"},
      {IBV_WC_GENERAL_ERR, "general_err"},
  };
  return table;
}

const std::vector<Named<ibv_event_type>>& event_names() {
  static const auto& table = *new std::vector<Named<ibv_event_type>>{
      {IBV_EVENT_CQ_ERR, "cq_err"},
      {IBV_EVENT_QP_FATAL, "qp_fatal"},
      {IBV_EVENT_QP_REQ_ERR, "qp_req_err"},
      {IBV_EVENT_QP_ACCESS_ERR, "qp_access_err"},
      {IBV_EVENT_COMM_EST, "comm_est"},
      {IBV_EVENT_SQ_DRAINED, "sq_drained"},
      {IBV_EVENT_PATH_MIG, "path_mig"},
      {IBV_EVENT_PATH_MIG_ERR, "path_mig_err"},
      {IBV_EVENT_DEVICE_FATAL, "device_fatal"},
      {IBV_EVENT_PORT_ACTIVE, "port_active"},
      {IBV_EVENT_PORT_ERR, "port_err"},
      {IBV_EVENT_LID_CHANGE, "lid_change"},
      {IBV_EVENT_PKEY_CHANGE, "pkey_change"},
      {IBV_EVENT_SM_CHANGE, "sm_change"},
      {IBV_EVENT_SRQ_ERR, "srq_err"},
      {IBV_EVENT_SRQ_LIMIT_REACHED, "srq_limit_reached"},
      {IBV_EVENT_QP_LAST_WQE_REACHED, "qp_last_wqe_reached"},
      {IBV_EVENT_CLIENT_REREGISTER, "client_reregister"},
      {IBV_EVENT_GID_CHANGE, "gid_change"},
  };
  return table;
}

const std::vector<Named<CmEvent>>& cm_event_names() {
  static const auto& table = *new std::vector<Named<CmEvent>>{
      {CmEvent::addr_resolved, "addr_resolved"},
      {CmEvent::addr_error, "addr_error"},
      {CmEvent::route_resolved, "route_resolved"},
      {CmEvent::route_error, "route_error"},
      {CmEvent::connect_request, "connect_request"},
      {CmEvent::connect_response, "connect_response"},
      {CmEvent::connect_error, "connect_error"},
      {CmEvent::unreachable, "unreachable"},
      {CmEvent::rejected, "rejected"},
      {CmEvent::established, "established"},
      {CmEvent::disconnected, "disconnected"},
      {CmEvent::device_removal, "device_removal"},
      {CmEvent::multicast_join, "multicast_join"},
      {CmEvent::multicast_error, "multicast_error"},
      {CmEvent::addr_change, "addr_change"},
      {CmEvent::timewait_exit, "timewait_exit"},
  };
  return table;
}

const std::vector<Named<int>>& errno_names() {
  static const auto& table = *new std::vector<Named<int>>{
      {EPERM, "EPERM"},
      {ENOENT, "ENOENT"},
      {EINTR, "EINTR"},
      {EIO, "EIO"},
      {ENXIO, "ENXIO"},
      {E2BIG, "E2BIG"},
      {EBADF, "EBADF"},
      {EAGAIN, "EAGAIN"},
      {ENOMEM, "ENOMEM"},
      {EACCES, "EACCES"},
      {EFAULT, "EFAULT"},
      {EBUSY, "EBUSY"},
      {EEXIST, "EEXIST"},
      {ENODEV, "ENODEV"},
      {EINVAL, "EINVAL"},
      {ENFILE, "ENFILE"},
      {EMFILE, "EMFILE"},
      {ENOSPC, "ENOSPC"},
      {ERANGE, "ERANGE"},
      {ENOSYS, "ENOSYS"},
      {EOVERFLOW, "EOVERFLOW"},
      {EPROTO, "EPROTO"},
      {EOPNOTSUPP, "EOPNOTSUPP"},
      {ENOTCONN, "ENOTCONN"},
      {ETIMEDOUT, "ETIMEDOUT"},
      {ECONNREFUSED, "ECONNREFUSED"},
      {ECONNRESET, "ECONNRESET"},
      {ENETDOWN, "ENETDOWN"},
      {ENETUNREACH, "ENETUNREACH"},
      {EHOSTUNREACH, "EHOSTUNREACH"},
      {ECANCELED, "ECANCELED"},
  };
  return table;
}

std::optional<std::uint64_t> parse_number(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int> parse_errno(std::string_view text) {
  if (auto known = lookup(errno_names(), text)) return known;
  auto number = parse_number(text);
  if (number && *number > 0 && *number < 4096) return static_cast<int>(*number);
  return std::nullopt;
}

std::optional<ObjectRef> parse_object(std::string_view text) {
  const auto hash = text.find('#');
  if (hash == std::string_view::npos) return std::nullopt;
  auto kind = lookup(object_kind_names(), text.substr(0, hash));
  auto index = parse_number(text.substr(hash + 1));
  if (!kind || !index || *index > UINT32_MAX) return std::nullopt;
  return ObjectRef{*kind, static_cast<std::uint32_t>(*index)};
}

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace engine

std::string_view to_string(FaultKind kind) {
  return engine::name_of(engine::fault_kind_names(), kind);
}
std::string_view to_string(ObjectKind kind) {
  return engine::name_of(engine::object_kind_names(), kind);
}
std::string_view to_string(Opcode opcode) {
  return engine::name_of(engine::opcode_names(), opcode);
}
std::string_view to_string(Verb verb) {
  // Indexed by the enum (every traced post and poll names its verb); the
  // order is verb_names()'s, which engine tests check name by name.
  static constexpr std::string_view kNames[] = {
      "alloc_pd",   "reg_mr",     "create_cq",     "resize_cq",     "create_comp_channel",
      "create_srq", "modify_srq", "create_qp",     "modify_qp",     "create_ah",
      "post_send",  "post_recv",  "post_srq_recv", "req_notify_cq", "poll_cq"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(Verb::poll_cq) + 1);
  const auto index = static_cast<std::size_t>(verb);
  return index < std::size(kNames) ? kNames[index] : "?";
}
std::string to_string(const ObjectRef& ref) {
  return std::string(to_string(ref.kind)) + "#" + std::to_string(ref.index);
}
std::string_view to_string(ibv_wc_status status) {
  return engine::name_of(engine::status_names(), status);
}
std::string_view to_string(ibv_event_type event) {
  return engine::name_of(engine::event_names(), event);
}
std::string_view to_string(CmEvent event) {
  return engine::name_of(engine::cm_event_names(), event);
}
std::string errno_name(int error) {
  std::string_view name = engine::name_of(engine::errno_names(), error);
  return name == "?" ? std::to_string(error) : std::string(name);
}

std::uint64_t parse_seed(std::string_view text, std::string_view source) {
  // No sign: stoull would take "-1" for 2^64 - 1.
  const bool signed_text = !text.empty() && (text[0] == '-' || text[0] == '+');
  if (auto value = engine::parse_number(text); value && !signed_text) return *value;
  throw PlanError(std::string(source) + "='" + std::string(text) +
                  "': expected a 64-bit unsigned seed (decimal or 0x hex)");
}

}  // namespace verbfault

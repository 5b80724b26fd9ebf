#include "cm_faults.h"

#include "connection_manager.h"
#include "injections.h"
#include "opcodes.h"
#include "run.h"
#include "ucma_abi.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>
#include <cstring>
#include <optional>

namespace verbfault::interposer::cm_faults {

namespace {

// cm_device_removal fired on an event of id `handle`: the verbs device of
// the QP it connected, if any, is fatal too.
struct DeviceRemoval {
  std::uint32_t handle = 0;
  std::optional<engine::inject::Target> device;
};

using provider::ucma::command_of;
using provider::ucma::kConnectRequest;
using provider::ucma::kConnectResponse;
using provider::ucma::kDeviceRemoval;
using provider::ucma::kDisconnected;
using provider::ucma::kEstablished;
using provider::ucma::kMulticastError;
using provider::ucma::kMulticastJoin;
using provider::ucma::kTimewaitExit;

// The registry's key of id `handle`: an address nothing lives at (the top
// byte set). A handle names one id of the process whatever its file (the
// kernel's ctx_table is one for every file, the simulated CM's ids_ too),
// so an id keeps its key and its name when rdma_migrate_id moves it.
const void* key_of(std::uint32_t handle) {
  return reinterpret_cast<const void*>(std::uintptr_t{0xc5} << 56 | handle);
}

// The CM file whose events each named id's are (guarded by the
// interposer's lock).
std::unordered_map<std::uint32_t, int>& files() {
  static auto* files = new std::unordered_map<std::uint32_t, int>();  // lives to _exit
  return *files;
}

// The id each librdmacm cookie (uid) names, from CREATE_ID and the
// passive side's ACCEPT (guarded by the interposer's lock).
std::unordered_map<std::uint64_t, std::uint32_t>& uids() {
  static auto* uids = new std::unordered_map<std::uint64_t, std::uint32_t>();  // lives to _exit
  return *uids;
}

std::uint32_t handle_of(const void* key) {
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(key));
}

template <class Response>
std::optional<Response> response_of(std::uint64_t address) {
  if (address == 0) return std::nullopt;
  Response response;
  std::memcpy(&response, reinterpret_cast<const void*>(address), sizeof response);
  return response;
}

// The id a command starts a step of, and the step (the kind whose
// opportunity it is: a connect is cm_unreachable's and cm_reject's).
struct Step {
  std::uint32_t id = 0;
  FaultKind kind{};
};

std::optional<Step> step_of(std::uint32_t cmd, const void* buffer, std::size_t length) {
  switch (cmd) {
    case RDMA_USER_CM_CMD_RESOLVE_IP:
      if (auto c = command_of<rdma_ucm_resolve_ip>(buffer, length))
        return Step{c->id, FaultKind::cm_addr_error};
      break;
    case RDMA_USER_CM_CMD_RESOLVE_ADDR:
      if (auto c = command_of<rdma_ucm_resolve_addr>(buffer, length))
        return Step{c->id, FaultKind::cm_addr_error};
      break;
    case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
      if (auto c = command_of<rdma_ucm_resolve_route>(buffer, length))
        return Step{c->id, FaultKind::cm_route_error};
      break;
    case RDMA_USER_CM_CMD_CONNECT:
      if (auto c = command_of<rdma_ucm_connect>(buffer, length))
        return Step{c->id, FaultKind::cm_unreachable};
      break;
    default:
      break;
  }
  return std::nullopt;
}

provider::CmFault cause_of(FaultKind kind) {
  switch (kind) {
    case FaultKind::cm_addr_error:
      return provider::CmFault::kAddrError;
    case FaultKind::cm_route_error:
      return provider::CmFault::kRouteError;
    case FaultKind::cm_unreachable:
      return provider::CmFault::kUnreachable;
    case FaultKind::cm_reject:
      return provider::CmFault::kReject;
    default:
      return provider::CmFault::kNone;
  }
}

// Names a new id; one already named keeps its name (a CONNECT_REQUEST
// that a delay put back names its child when first read). `qp_type`: the
// QP type its port space implies (ucma_get_qp_type), for the checks of its
// messages; a child's is its listener's, which the event does not name:
// RC unless known.
void track(Run& run, int fd, std::uint32_t handle, ibv_qp_type qp_type = IBV_QPT_RC) {
  files()[handle] = fd;
  if (run.registry.find(key_of(handle)) == nullptr)
    run.add_object(ObjectKind::cm_id, key_of(handle), {}, !provider::cm_relayed(fd)).qp_type =
        qp_type;
}

ibv_qp_type qp_type_of(const rdma_ucm_create_id& command) {
  switch (command.ps) {
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB:
      return IBV_QPT_UD;
    case RDMA_PS_IB:
      return static_cast<ibv_qp_type>(command.qp_type);
    default:
      return IBV_QPT_RC;
  }
}

// The room for the application's private data in the message a command
// sends (IBA 12.6, ib_cm.h's IB_CM_*_PRIVATE_DATA_SIZE; the REQ's and SIDR
// REQ's first 36 bytes are rdma_cm's header for IP ids: cma_hdr).
unsigned room_of(std::uint32_t cmd, bool ud) {
  switch (cmd) {
    case RDMA_USER_CM_CMD_CONNECT:
      return ud ? 216 - 36 : 92 - 36;
    case RDMA_USER_CM_CMD_ACCEPT:
      return ud ? 136 : 196;
    default:  // REJECT
      return 148;
  }
}

// The id and connection parameters of a CONNECT or ACCEPT that gives
// them (valid); nullopt for any other command.
std::optional<std::pair<std::uint32_t, rdma_ucm_conn_param>> conn_param_of(std::uint32_t cmd,
                                                                           const void* buffer,
                                                                           std::size_t length) {
  if (cmd == RDMA_USER_CM_CMD_CONNECT)
    if (const auto c = command_of<rdma_ucm_connect>(buffer, length); c && c->conn_param.valid)
      return std::pair{c->id, c->conn_param};
  if (cmd == RDMA_USER_CM_CMD_ACCEPT)
    if (const auto c = command_of<rdma_ucm_accept>(buffer, length); c && c->conn_param.valid)
      return std::pair{c->id, c->conn_param};
  return std::nullopt;
}

// The checks of a command before it runs (lock held): its private data.
void check_command(Run& run, std::uint32_t cmd, const void* buffer, std::size_t length) {
  std::uint32_t handle = 0;
  unsigned data = 0;
  const char* call = nullptr;
  if (const auto conn = conn_param_of(cmd, buffer, length)) {
    handle = conn->first, data = conn->second.private_data_len;
    call = cmd == RDMA_USER_CM_CMD_CONNECT ? "rdma_connect" : "rdma_accept";
  } else if (cmd == RDMA_USER_CM_CMD_REJECT) {
    const auto c = command_of<rdma_ucm_reject>(buffer, length);
    if (!c) return;
    handle = c->id, data = c->private_data_len, call = "rdma_reject";
  } else {
    return;
  }
  const Tracked* id = run.registry.find(key_of(handle));
  if (id == nullptr) return;
  const unsigned room = room_of(cmd, id->qp_type == IBV_QPT_UD);
  if (data > room) run.checkers.cm_private_data_too_long(run, *id, call, data, room);
}

// The QPs an id connected are no longer its once it is gone.
void unlink_qps(Run& run, const void* key) {
  for (Tracked* qp : run.registry.all(ObjectKind::qp))
    if (qp->cm_id_handle == key) qp->cm_id_handle = nullptr;
}

// rdma_destroy_id wants the id's QP gone first (rdma_destroy_id(3)).
void check_destroy(Run& run, const Tracked& id) {
  for (Tracked* qp : run.registry.all(ObjectKind::qp))
    if (qp->cm_id_handle == id.handle) {
      run.checkers.cm_id_destroyed_with_qp(run, id, *qp);
      return;
    }
}

void forget(Run& run, std::uint32_t handle) {
  files().erase(handle);
  std::erase_if(uids(), [&](const auto& entry) { return entry.second == handle; });
  if (Tracked* id = run.registry.find(key_of(handle))) {
    unlink_qps(run, id->handle);
    run.remove_object(*id);
  }
}

// CONNECT and ACCEPT name the QP the id connects (a connected one: RC, UC;
// a UD id's QP has no connection to lose): it is the id's from now on.
void link_qp(Run& run, std::uint32_t handle, const rdma_ucm_conn_param& conn) {
  Tracked* id = run.registry.find(key_of(handle));
  Tracked* qp = run.registry.find_qp(conn.qp_num & 0xffffff);
  if (id == nullptr || qp == nullptr || qp->qp_type == IBV_QPT_UD) return;
  qp->cm_id = id->ref;
  qp->cm_id_handle = id->handle;
}

// The QP id `handle` connected (CONNECT or ACCEPT named it), if any.
Tracked* qp_of(Run& run, std::uint32_t handle) {
  const Tracked* id = run.registry.find(key_of(handle));
  if (id == nullptr) return nullptr;
  for (Tracked* qp : run.registry.all(ObjectKind::qp))
    if (qp->cm_id_handle == id->handle) return qp;
  return nullptr;
}

// The engine's decision for an opportunity of `kinds` on id `handle`.
// The level of its record: a relayed file's (a kernel's) faults are made
// at effect level (provider/cm_relay.h).
std::optional<Decision> decide(Run& run, int fd, Site site, std::uint32_t handle, FaultKind step,
                               std::initializer_list<FaultKind> kinds,
                               std::optional<CmEvent> event = std::nullopt) {
  Tracked* id = run.registry.find(key_of(handle));
  if (id == nullptr) return std::nullopt;
  Opportunity at;
  at.site = site;
  at.object = id;
  at.cm_step = step;
  at.cm_event = event;
  auto decision = run.engine.decide(at, kinds);
  if (decision) {
    const char* level = provider::cm_relayed(fd) ? "effect" : "cause";
    if (decision->rule->kind == FaultKind::cm_delay)
      run.engine.record_fault(*id, *decision, level,
                              {{"event", to_string(*decision->rule->cm_event)},
                               {"delay_ms", *decision->rule->delay_ms}});
    else
      run.engine.record_fault(*id, *decision, level);
  }
  return decision;
}

}  // namespace

Executed execute(Run& run, int fd, const void* buffer, std::size_t length) {
  rdma_ucm_cmd_hdr header{};
  if (buffer == nullptr || length < sizeof header || !run.active())
    return {provider::cm_write(fd, buffer, length)};
  std::memcpy(&header, buffer, sizeof header);

  // Before the command: its checks, and the fault of the step it starts.
  provider::CmFault fault = provider::CmFault::kNone;
  {
    std::lock_guard lock(run.mutex);
    check_command(run, header.cmd, buffer, length);
    if (run.engine.has_rules(Site::cm_command))
      if (const std::optional<Step> step = step_of(header.cmd, buffer, length))
        if (auto decision = decide(run, fd, Site::cm_command, step->id, step->kind,
                                   {FaultKind::cm_addr_error, FaultKind::cm_route_error,
                                    FaultKind::cm_unreachable, FaultKind::cm_reject}))
          fault = cause_of(decision->rule->kind);
  }

  const ssize_t result = provider::cm_write(fd, buffer, length, fault);
  if (result < 0) return {result};
  // cm_device_removal's, made once the interposer's lock is released.
  std::optional<DeviceRemoval> removal;
  // cm_addr_change's id, likewise.
  std::optional<std::uint32_t> address_changed;

  // What the command made or ended: the ids to name, the event to judge.
  switch (header.cmd) {
    case RDMA_USER_CM_CMD_CREATE_ID:
      if (auto c = command_of<rdma_ucm_create_id>(buffer, length))
        if (auto r = response_of<rdma_ucm_create_id_resp>(c->response)) {
          std::lock_guard lock(run.mutex);
          track(run, fd, r->id, qp_type_of(*c));
          uids()[c->uid] = r->id;
        }
      break;
    case RDMA_USER_CM_CMD_MIGRATE_ID:
      // The id's events go to this file now (the command names the old).
      if (auto c = command_of<rdma_ucm_migrate_id>(buffer, length)) {
        std::lock_guard lock(run.mutex);
        if (auto found = files().find(c->id); found != files().end()) found->second = fd;
      }
      break;
    case RDMA_USER_CM_CMD_CONNECT:
    case RDMA_USER_CM_CMD_ACCEPT:
      if (const auto conn = conn_param_of(header.cmd, buffer, length)) {
        std::lock_guard lock(run.mutex);
        link_qp(run, conn->first, conn->second);
        // The passive side's ACCEPT names the child's cookie (librdmacm's
        // own ACCEPT that sends the RTU has no parameters).
        if (header.cmd == RDMA_USER_CM_CMD_ACCEPT)
          if (auto c = command_of<rdma_ucm_accept>(buffer, length)) uids()[c->uid] = c->id;
      }
      break;
    case RDMA_USER_CM_CMD_DESTROY_ID:
      if (auto c = command_of<rdma_ucm_destroy_id>(buffer, length)) {
        std::lock_guard lock(run.mutex);
        if (const Tracked* id = run.registry.find(key_of(c->id))) check_destroy(run, *id);
        forget(run, c->id);
      }
      break;
    case RDMA_USER_CM_CMD_GET_EVENT: {
      auto c = command_of<rdma_ucm_get_event>(buffer, length);
      // The event's first fields (uid, id, event, status): the response
      // is at least that long (rdma_get_cm_event writes all of it).
      struct Head {
        std::uint64_t uid;
        std::uint32_t id;
        std::uint32_t event;
      };
      if (!c || header.out < sizeof(Head)) break;
      const auto head = response_of<Head>(c->response);
      if (!head) break;
      // A multicast event names the join (ucma's multicast id), not an id:
      // the CM's faults are of ids and their connections.
      if (head->event == kMulticastJoin || head->event == kMulticastError) break;
      std::lock_guard lock(run.mutex);
      // A CONNECT_REQUEST names its child (the response's id): the
      // opportunities of its events, cm_delay's of this one too.
      if (head->event == kConnectRequest) track(run, fd, head->id);
      if (head->event <= static_cast<std::uint32_t>(CmEvent::timewait_exit) &&
          run.engine.has_rules(Site::cm_event,
                               engine::FaultEngine::kind_bit(FaultKind::cm_delay)) &&
          !provider::cm_event_was_delayed(fd)) {
        const auto event = static_cast<CmEvent>(head->event);
        if (auto decision = decide(run, fd, Site::cm_event, head->id, FaultKind::cm_delay,
                                   {FaultKind::cm_delay}, event))
          if (provider::cm_delay_event(fd, std::uint64_t{*decision->rule->delay_ms} * 1000000))
            return {result, true};
      }
      const std::optional<FaultKind> step =
          head->event == kDisconnected   ? std::optional(FaultKind::cm_lost_disconnect)
          : head->event == kTimewaitExit ? std::optional(FaultKind::cm_timewait_exit_missing)
                                         : std::nullopt;
      if (step && run.engine.has_rules(Site::cm_event) &&
          decide(run, fd, Site::cm_event, head->id, *step,
                 {FaultKind::cm_lost_disconnect, FaultKind::cm_timewait_exit_missing},
                 static_cast<CmEvent>(head->event)) &&
          provider::cm_withdraw_event(fd, head->id))
        return {result, true};
      // cm_connect_error: the REP came and the id's QP cannot take it.
      // librdmacm moves the QP to RTR as it reads CONNECT_RESPONSE
      // (ucma_process_conn_resp); that modify is to fail.
      if (head->event == kConnectResponse &&
          run.engine.has_rules(Site::cm_event,
                               engine::FaultEngine::kind_bit(FaultKind::cm_connect_error)))
        if (Tracked* qp = qp_of(run, head->id))
          if (decide(run, fd, Site::cm_event, head->id, FaultKind::cm_connect_error,
                     {FaultKind::cm_connect_error}, CmEvent::connect_response))
            qp->cm_rtr_fails = true;
      // cm_unreachable after ESTABLISHED: on a RoCE port, Linux 6.0+ queues
      // UNREACHABLE for an id whose neighbour's address changed
      // (cma_netevent_callback). The connection's opportunity is its
      // establishment: CONNECT_RESPONSE on the active side (librdmacm
      // answers it and reports ESTABLISHED), ESTABLISHED on the passive.
      if ((head->event == kConnectResponse || head->event == kEstablished) &&
          run.engine.has_rules(Site::cm_command,
                               engine::FaultEngine::kind_bit(FaultKind::cm_unreachable)) &&
          provider::cm_id_on_ethernet(fd, head->id) &&
          decide(run, fd, Site::cm_command, head->id, FaultKind::cm_unreachable,
                 {FaultKind::cm_unreachable}, static_cast<CmEvent>(head->event)))
        provider::cm_neighbour_changed(fd, head->id);
      // cm_device_removal: the device the id is on goes away after this
      // event (hot unplug, a driver unloaded): every id on it hears
      // DEVICE_REMOVAL, and the verbs device of the QP it connected is
      // fatal (IBV_EVENT_DEVICE_FATAL, ib_uverbs' disassociation).
      if (run.engine.has_rules(Site::cm_event,
                               engine::FaultEngine::kind_bit(FaultKind::cm_device_removal)) &&
          head->event != kDeviceRemoval &&
          decide(run, fd, Site::cm_event, head->id, FaultKind::cm_device_removal,
                 {FaultKind::cm_device_removal}, static_cast<CmEvent>(head->event))) {
        removal = DeviceRemoval{head->id, {}};
        if (const Tracked* qp = qp_of(run, head->id))
          removal->device = engine::inject::Target{
              qp->handle, static_cast<ibv_context*>(const_cast<void*>(qp->context_handle)),
              qp->simulated};
      }
      // cm_addr_change: after this event the netdev the id is bound to
      // takes another hardware address (a bond's failover): the kernel
      // queues ADDR_CHANGE for every id bound to it (cma_netdev_change).
      if (run.engine.has_rules(Site::cm_event,
                               engine::FaultEngine::kind_bit(FaultKind::cm_addr_change)) &&
          head->event != kDeviceRemoval &&
          decide(run, fd, Site::cm_event, head->id, FaultKind::cm_addr_change,
                 {FaultKind::cm_addr_change}, static_cast<CmEvent>(head->event)))
        address_changed = head->id;
      // The application knows its connection is gone: posts on its QPs
      // from now on can only fail (cm.post_after_disconnect).
      if (head->event == kDisconnected)
        if (const Tracked* id = run.registry.find(key_of(head->id)))
          for (Tracked* qp : run.registry.all(ObjectKind::qp))
            if (qp->cm_id_handle == id->handle) qp->cm_disconnected = true;
      break;
    }
    default:
      break;
  }
  if (removal) {
    if (removal->device) engine::inject::device_fatal(run.engine, *removal->device);
    provider::cm_device_removed(fd, removal->handle);
  }
  if (address_changed) provider::cm_address_changed(fd, *address_changed);
  return {result};
}

void closed(Run& run, int fd) {
  std::lock_guard lock(run.mutex);
  std::vector<std::uint32_t> owned;
  for (const auto& [handle, file] : files())
    if (file == fd) owned.push_back(handle);
  for (std::uint32_t handle : owned) forget(run, handle);
}

std::string name_of_file(Run& run, int fd) {
  std::string name = "rdma_cm events of";
  const auto ids = provider::cm_id_states(fd);
  if (ids.empty()) return name + " no id";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Tracked* id = run.registry.find(key_of(ids[i].first));
    name +=
        (i == 0 ? " " : ", ") + (id != nullptr ? id->name() : "an id") + " (" + ids[i].second + ")";
  }
  return name;
}

namespace {
// The CM files threads wait on in rdma_get_cm_event (cm_files.cpp), for a
// deadlock's report. Guarded by its own mutex: the waits begin and end
// without the interposer's lock.
std::mutex g_waits_mutex;
std::vector<int> g_waits;
}  // namespace

void waiting(int fd, bool starts) {
  std::lock_guard lock(g_waits_mutex);
  if (starts)
    g_waits.push_back(fd);
  else if (auto it = std::find(g_waits.begin(), g_waits.end(), fd); it != g_waits.end())
    g_waits.erase(it);
}

void deadlocked(Run& run) {
  int fd = -1;
  {
    std::lock_guard lock(g_waits_mutex);
    if (g_waits.empty()) return;
    fd = g_waits.front();
  }
  std::lock_guard lock(run.mutex);
  // Named on the first id that is not a listener (a connection's event
  // is the likelier one awaited), else the first; the report lists all.
  const Tracked* first = nullptr;
  const Tracked* connection = nullptr;
  for (const auto& [handle, state_name] : provider::cm_id_states(fd)) {
    const Tracked* id = run.registry.find(key_of(handle));
    if (id == nullptr) continue;
    if (first == nullptr) first = id;
    if (connection == nullptr && state_name != "listen") connection = id;
  }
  const Tracked* named = connection != nullptr ? connection : first;
  if (named != nullptr) run.checkers.cm_event_never_comes(run, *named, name_of_file(run, fd));
}

bool rtr_fails(Run& run, const void* qp) {
  Tracked* tracked = run.registry.find(qp);
  if (tracked == nullptr || !tracked->cm_rtr_fails) return false;
  tracked->cm_rtr_fails = false;
  return true;
}

const Tracked* id_of_uid(Run& run, std::uint64_t uid) {
  const auto found = uids().find(uid);
  return found == uids().end() ? nullptr : run.registry.find(key_of(found->second));
}

void peer_gone(Run& run, const void* key) {
  int fd = -1;
  {
    std::lock_guard lock(run.mutex);
    const auto found = files().find(handle_of(key));
    if (found == files().end()) return;  // destroyed meanwhile
    fd = found->second;
  }
  provider::cm_peer_gone(fd, handle_of(key));
}

}  // namespace verbfault::interposer::cm_faults

namespace verbfault::interposer {

int cm_refused_modify(Run& run, const void* qp, const ibv_qp_attr& attr, int mask) {
  // The state read as its raw value: a program may pass any number there
  // (the provider refuses it), which loaded as the enum would be undefined.
  if (!run.active() || (mask & IBV_QP_STATE) == 0 ||
      record::raw_value(attr.qp_state) != IBV_QPS_RTR)
    return 0;
  std::lock_guard lock(run.mutex);
  return cm_faults::rtr_fails(run, qp) ? EINVAL : 0;
}

}  // namespace verbfault::interposer

#include "connection_manager.h"

#include "cm_addresses.h"
#include "cm_wire.h"
#include "device.h"
#include "event_wait.h"
#include "fabric.h"
#include "user_memory.h"
#include "wire/endpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace verbfault::sim::cm {

namespace {

// ucma_get_qp_type: the QP type a port space implies.
std::optional<uint8_t> qp_type_of(uint16_t port_space, uint8_t asked) {
  switch (port_space) {
    case RDMA_PS_TCP:
      return IBV_QPT_RC;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB:
      return IBV_QPT_UD;
    case RDMA_PS_IB:
      return asked;
    default:
      return std::nullopt;
  }
}

// A command's input, copied out as the kernel does (copy_from_user of the
// whole structure: input shorter than it is EINVAL here, where the kernel
// would read past the write).
template <class Command>
bool read_command(const uint8_t* input, uint16_t in, Command& command) {
  if (in < sizeof command) return false;
  std::memcpy(&command, input, sizeof command);
  return true;
}

// CONNECT and ACCEPT read min(in, sizeof) and need at least up to `ece`
// (ucma_connect, ucma_accept: older librdmacm sends none).
template <class Command>
bool read_command_up_to_ece(const uint8_t* input, uint16_t in, Command& command) {
  command = Command{};
  if (in < offsetof(Command, ece)) return false;
  std::memcpy(&command, input, std::min<std::size_t>(in, sizeof command));
  return true;
}

// A listener as the status table holds it for the other members
// (wire::StatusTable::add_listener): valid bit, port space, port, AF-only,
// family, and the address it is bound to: 0 for the wildcard or loopback,
// else the fabric address's member and device + 1 (198.18.<m>.<d+1>: the
// only specific addresses a bind takes).
constexpr uint64_t kListenerValid = uint64_t{1} << 63;
constexpr uint64_t kListenerAfOnly = uint64_t{1} << 48;
constexpr uint64_t kListenerIpv6 = uint64_t{1} << 49;
constexpr int kListenerAddressShift = 16;

uint16_t address_code(const sockaddr_storage& address) {
  const std::optional<FabricNode> node = node_of_address(address);
  if (!node) return 0;
  return static_cast<uint16_t>(node->member << 8 | static_cast<uint32_t>(node->device + 1));
}

uint64_t listener_entry(uint16_t port_space, uint16_t port, bool af_only, bool ipv6,
                        uint16_t address) {
  return kListenerValid | uint64_t{port_space} << 32 | port |
         uint64_t{address} << kListenerAddressShift | (af_only ? kListenerAfOnly : 0) |
         (ipv6 ? kListenerIpv6 : 0);
}

uint16_t listener_address(uint64_t entry) {
  return static_cast<uint16_t>(entry >> kListenerAddressShift);
}

// The kernel's default of net.rdma_ucm.max_backlog (ucma.c).
constexpr uint32_t kMaxBacklog = 1024;

}  // namespace

uint32_t ConnectionManager::seq_num_for(uint32_t member, uint32_t handle) {
  uint32_t x = (member + 1) * 0x9e3779b1u ^ (handle + 1) * 0x85ebca6bu;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return x & 0xffffff;
}

int ConnectionManager::open_file(int flags) {
  auto file = std::make_unique<CmFile>();
  const int fd = file->readiness.fd();
  if (fd < 0) return -1;
  // The application's flags on the descriptor: O_NONBLOCK makes GET_EVENT
  // fail with EAGAIN (ucma_get_event); the eventfd is CLOEXEC already.
  if ((flags & O_NONBLOCK) != 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  if ((flags & O_CLOEXEC) == 0) fcntl(fd, F_SETFD, 0);
  files_[fd] = std::move(file);
  return fd;
}

bool ConnectionManager::close_file(int fd) {
  const auto found = files_.find(fd);
  if (found == files_.end()) return false;
  // ucma_close: every id of the file is destroyed, as DESTROY_ID would.
  std::vector<uint32_t> owned;
  for (const auto& [handle, id] : ids_)
    if (id.file == fd) owned.push_back(handle);
  for (uint32_t handle : owned) destroy(handle);
  // The eventfd is the application's descriptor: close(2) closes it, not
  // the ReadinessFd.
  found->second->readiness.release();
  files_.erase(found);
  deliver_local();
  return true;
}

CmId* ConnectionManager::find(int fd, uint32_t handle, int& error) {
  const auto found = ids_.find(handle);
  if (found == ids_.end()) {
    error = ENOENT;
    return nullptr;
  }
  if (found->second.file != fd) {
    error = EINVAL;
    return nullptr;
  }
  return &found->second;
}

CmId* ConnectionManager::find_with_device(int fd, uint32_t handle, int& error) {
  CmId* id = find(fd, handle, error);
  if (id != nullptr && !id->source.device) {
    error = EINVAL;
    return nullptr;
  }
  return id;
}

uint32_t ConnectionManager::new_handle() {
  // The kernel's ctx_table hands out the lowest free index (xa_alloc).
  uint32_t handle = 0;
  for (const auto& [used, id] : ids_) {
    if (used != handle) break;
    ++handle;
  }
  return handle;
}

int ConnectionManager::execute(int fd, const uint8_t* buffer, std::size_t length,
                               std::unique_lock<std::mutex>& guard, Fault fault) {
  fault_ = fault;
  const int result = execute_command(fd, buffer, length, guard);
  fault_ = Fault::kNone;
  return result;
}

bool ConnectionManager::withdraw_event(int fd, uint32_t handle) {
  int error = 0;
  CmId* id = find(fd, handle, error);
  if (id == nullptr || id->events_reported == 0) return false;
  --id->events_reported;
  return true;
}

bool ConnectionManager::delay_event(int fd, uint64_t delay_ns) {
  const auto file = files_.find(fd);
  if (file == files_.end() || !file->second->last_read || file->second->last_read->delayed)
    return false;
  PendingEvent event = *file->second->last_read;
  file->second->last_read.reset();
  // Undo what reading it did (get_event): it was never read.
  count_read(event, -1);
  if (auto id = ids_.find(event.charged); id != ids_.end()) {
    if (event.connect_request) {
      if (id->second.backlog > 0) --id->second.backlog;
      if (auto child = ids_.find(event.response.id); child != ids_.end())
        child->second.listener = event.charged;
    }
  }
  event.delayed = true;
  delayed_.emplace(fabric_.clock().now() + delay_ns, DelayedEvent{fd, event});
  return true;
}

namespace {

// enum rdma_cm_state's names (cma_priv.h), without RDMA_CM_.
const char* name_of(IdState state) {
  switch (state) {
    case IdState::kIdle:
      return "idle";
    case IdState::kAddrQuery:
      return "addr_query";
    case IdState::kAddrResolved:
      return "addr_resolved";
    case IdState::kRouteQuery:
      return "route_query";
    case IdState::kRouteResolved:
      return "route_resolved";
    case IdState::kConnect:
      return "connect";
    case IdState::kDisconnect:
      return "disconnect";
    case IdState::kAddrBound:
      return "addr_bound";
    case IdState::kListen:
      return "listen";
    case IdState::kDeviceRemoval:
      return "device_removal";
    case IdState::kDestroying:
      return "destroying";
  }
  return "?";
}

// enum ib_cm_state's names (cm.c), without IB_CM_.
const char* name_of(ConnectionState state) {
  switch (state) {
    case ConnectionState::kNone:
      return "idle";
    case ConnectionState::kReqSent:
      return "req_sent";
    case ConnectionState::kReqReceived:
      return "req_rcvd";
    case ConnectionState::kRepSent:
      return "rep_sent";
    case ConnectionState::kRepReceived:
      return "rep_rcvd";
    case ConnectionState::kEstablished:
      return "established";
    case ConnectionState::kDreqSent:
      return "dreq_sent";
    case ConnectionState::kDreqReceived:
      return "dreq_rcvd";
    case ConnectionState::kTimewait:
      return "timewait";
    case ConnectionState::kSidrReqSent:
      return "sidr_req_sent";
  }
  return "?";
}

}  // namespace

std::vector<std::pair<unsigned, std::string>> ConnectionManager::id_states(int fd) const {
  std::vector<std::pair<unsigned, std::string>> states;
  for (const auto& [handle, id] : ids_) {
    if (id.file != fd) continue;
    std::string state = name_of(id.state);
    if (id.cm_id) state += std::string("/") + name_of(id.connection);
    states.emplace_back(handle, std::move(state));
  }
  return states;
}

bool ConnectionManager::on_ethernet(int fd, uint32_t handle) {
  int error = 0;
  const CmId* id = find_with_device(fd, handle, error);
  return id != nullptr && device_at(*id->source.device).ethernet();
}

bool ConnectionManager::neighbour_changed(int fd, uint32_t handle) {
  if (!on_ethernet(fd, handle)) return false;
  int error = 0;
  report(*find(fd, handle, error), CmEvent::kUnreachable, -ETIMEDOUT);
  return true;
}

std::vector<CmId*> ConnectionManager::ids_bound_beside(int fd, uint32_t handle, bool same_port) {
  int error = 0;
  const CmId* fired = find_with_device(fd, handle, error);
  if (fired == nullptr) return {};
  const int device = *fired->source.device;
  const uint8_t port = fired->source.port;
  std::vector<CmId*> beside;
  for (auto& [other_handle, id] : ids_) {
    if (!id.source.device || *id.source.device != device) continue;
    if (same_port && id.source.port != port) continue;
    if (id.state == IdState::kDeviceRemoval || id.state == IdState::kDestroying) continue;
    beside.push_back(&id);
  }
  return beside;
}

bool ConnectionManager::device_removed(int fd, uint32_t handle) {
  // cma_process_remove: every id on the device (a wildcard listener has
  // none: the kernel's per-device listeners under it go quietly) moves to
  // DEVICE_REMOVAL, where every command but DESTROY_ID finds it in the
  // wrong state, and hears DEVICE_REMOVAL. An id removed already: nothing.
  int error = 0;
  if (const CmId* fired = find(fd, handle, error);
      fired != nullptr && fired->state == IdState::kDeviceRemoval)
    return false;
  const std::vector<CmId*> on_device = ids_bound_beside(fd, handle, false);
  if (on_device.empty()) return false;
  for (CmId* id : on_device) {
    id->state = IdState::kDeviceRemoval;
    report(*id, CmEvent::kDeviceRemoval, 0);
  }
  return true;
}

bool ConnectionManager::address_changed(int fd, uint32_t handle) {
  // cma_netdev_change: every id whose bound netdev is the one that changed
  // hears ADDR_CHANGE; its state is left as it is.
  const std::vector<CmId*> on_port = ids_bound_beside(fd, handle, true);
  if (on_port.empty()) return false;
  for (CmId* id : on_port) report(*id, CmEvent::kAddrChange, 0);
  return true;
}

bool ConnectionManager::peer_gone(int fd, uint32_t handle) {
  int error = 0;
  CmId* id = find(fd, handle, error);
  if (id == nullptr || (id->connection != ConnectionState::kEstablished &&
                        id->connection != ConnectionState::kRepSent))
    return false;
  // As the peer's DREQ would (its kernel destroying its ids): a DREP this
  // side's rdma_disconnect sends later finds the peer's id in ESTABLISHED,
  // which ignores it (on_disconnect_reply).
  on_disconnect_request(*id);
  deliver_local();
  return true;
}

bool ConnectionManager::event_was_delayed(int fd) const {
  const auto file = files_.find(fd);
  return file != files_.end() && file->second->last_read && file->second->last_read->delayed;
}

int ConnectionManager::execute_command(int fd, const uint8_t* buffer, std::size_t length,
                                       std::unique_lock<std::mutex>& guard) {
  // ucma_write's checks, in its order.
  rdma_ucm_cmd_hdr header;
  if (length < sizeof header) return EINVAL;
  std::memcpy(&header, buffer, sizeof header);
  if (header.cmd > RDMA_USER_CM_CMD_JOIN_MCAST) return EINVAL;
  if (header.in + sizeof header > length) return EINVAL;
  const uint8_t* input = buffer + sizeof header;
  int result = ENOSYS;
  switch (header.cmd) {
    case RDMA_USER_CM_CMD_CREATE_ID: {
      rdma_ucm_create_id command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = create_id(fd, command, header.out);
      break;
    }
    case RDMA_USER_CM_CMD_DESTROY_ID: {
      rdma_ucm_destroy_id command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = destroy_id(fd, command, header.out);
      break;
    }
    case RDMA_USER_CM_CMD_BIND_IP: {
      rdma_ucm_bind_ip command;
      if (!read_command(input, header.in, command)) return EINVAL;
      const auto* address = reinterpret_cast<const sockaddr*>(&command.addr);
      // ucma_bind_ip: a family of no size is EINVAL.
      if (address_size(address) == 0) return EINVAL;
      result = bind(fd, command.id, address, address_size(address));
      break;
    }
    case RDMA_USER_CM_CMD_BIND: {
      rdma_ucm_bind command;
      if (!read_command(input, header.in, command)) return EINVAL;
      const auto* address = reinterpret_cast<const sockaddr*>(&command.addr);
      // ucma_bind: the size must be the family's. AF_IB, whose size the
      // kernel knows, is not served: EAFNOSUPPORT (cm_addresses.h).
      if (command.reserved != 0 || command.addr_size == 0) return EINVAL;
      if (address->sa_family == kAfIb && command.addr_size == kSockaddrIbSize) return EAFNOSUPPORT;
      if (command.addr_size != address_size(address)) return EINVAL;
      result = bind(fd, command.id, address, command.addr_size);
      break;
    }
    case RDMA_USER_CM_CMD_RESOLVE_IP: {
      rdma_ucm_resolve_ip command;
      if (!read_command(input, header.in, command)) return EINVAL;
      const auto* source = reinterpret_cast<const sockaddr*>(&command.src_addr);
      const auto* destination = reinterpret_cast<const sockaddr*>(&command.dst_addr);
      // ucma_resolve_ip: a source of a family is checked, the destination
      // always (rdma_addr_size_in6).
      if ((source->sa_family != 0 && address_size(source) == 0) || address_size(destination) == 0)
        return EINVAL;
      result = resolve(fd, command.id, source->sa_family != 0 ? source : nullptr, destination,
                       command.timeout_ms);
      break;
    }
    case RDMA_USER_CM_CMD_RESOLVE_ADDR: {
      rdma_ucm_resolve_addr command;
      if (!read_command(input, header.in, command)) return EINVAL;
      const auto* source = reinterpret_cast<const sockaddr*>(&command.src_addr);
      const auto* destination = reinterpret_cast<const sockaddr*>(&command.dst_addr);
      if (command.reserved != 0) return EINVAL;
      if (command.src_size != 0 && command.src_size != rdma_family_size(source)) return EINVAL;
      if (command.dst_size == 0 || command.dst_size != rdma_family_size(destination)) return EINVAL;
      if ((command.src_size != 0 && source->sa_family == kAfIb) || destination->sa_family == kAfIb)
        return EAFNOSUPPORT;
      result = resolve(fd, command.id, command.src_size != 0 ? source : nullptr, destination,
                       command.timeout_ms);
      break;
    }
    case RDMA_USER_CM_CMD_RESOLVE_ROUTE: {
      rdma_ucm_resolve_route command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = resolve_route(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_QUERY_ROUTE: {
      rdma_ucm_query command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = query_route(fd, command, header.out);
      break;
    }
    case RDMA_USER_CM_CMD_CONNECT: {
      rdma_ucm_connect command;
      if (!read_command_up_to_ece(input, header.in, command)) return EINVAL;
      result = connect(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_LISTEN: {
      rdma_ucm_listen command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = listen(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_ACCEPT: {
      rdma_ucm_accept command;
      if (!read_command_up_to_ece(input, header.in, command)) return EINVAL;
      result = accept(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_REJECT: {
      rdma_ucm_reject command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = reject(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_DISCONNECT: {
      rdma_ucm_disconnect command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = disconnect(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_INIT_QP_ATTR: {
      rdma_ucm_init_qp_attr command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = init_qp_attr(fd, command, header.out);
      break;
    }
    case RDMA_USER_CM_CMD_GET_EVENT: {
      rdma_ucm_get_event command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = get_event(fd, command, header.out, guard);
      break;
    }
    case RDMA_USER_CM_CMD_SET_OPTION: {
      rdma_ucm_set_option command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = set_option(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_NOTIFY: {
      rdma_ucm_notify command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = notify(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_MIGRATE_ID: {
      rdma_ucm_migrate_id command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = migrate_id(fd, command);
      break;
    }
    case RDMA_USER_CM_CMD_QUERY: {
      rdma_ucm_query command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = query(fd, command, header.out);
      break;
    }
    case RDMA_USER_CM_CMD_JOIN_IP_MCAST: {
      // ucma_join_ip_multicast: the older command, a full member's join of
      // an IPv4 or IPv6 address (librdmacm sends it when AF_IB is not
      // served, as here).
      rdma_ucm_join_ip_mcast command;
      if (!read_command(input, header.in, command)) return EINVAL;
      rdma_ucm_join_mcast join{};
      join.response = command.response;
      join.uid = command.uid;
      join.id = command.id;
      const auto* address = reinterpret_cast<const sockaddr*>(&command.addr);
      join.addr_size = static_cast<uint16_t>(address_size(address));
      if (join.addr_size == 0) return EINVAL;
      join.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
      std::memcpy(&join.addr, &command.addr, join.addr_size);
      result = join_multicast(fd, join, header.out);
      break;
    }
    case RDMA_USER_CM_CMD_JOIN_MCAST: {
      rdma_ucm_join_mcast command;
      if (!read_command(input, header.in, command)) return EINVAL;
      // ucma_join_multicast: an address of a family the kernel knows.
      if (rdma_family_size(reinterpret_cast<const sockaddr*>(&command.addr)) == 0) return EINVAL;
      result = join_multicast(fd, command, header.out);
      break;
    }
    case RDMA_USER_CM_CMD_LEAVE_MCAST: {
      rdma_ucm_destroy_id command;
      if (!read_command(input, header.in, command)) return EINVAL;
      result = leave_multicast(fd, command, header.out);
      break;
    }
    default:
      // GET_OPTION has no handler in the kernel either: said, never
      // pretended.
      result = ENOSYS;
  }
  deliver_local();
  return result;
}

int ConnectionManager::create_id(int fd, const rdma_ucm_create_id& command, uint16_t out) {
  if (out < sizeof(rdma_ucm_create_id_resp)) return ENOSPC;
  const std::optional<uint8_t> qp_type = qp_type_of(command.ps, command.qp_type);
  if (!qp_type) return EINVAL;
  CmId id;
  id.handle = new_handle();
  id.uid = command.uid;
  id.file = fd;
  id.port_space = command.ps;
  id.qp_type = *qp_type;
  id.seq_num = seq_num_for(fabric_.member(), id.handle);
  rdma_ucm_create_id_resp response{};
  response.id = id.handle;
  // The response first: a fault there creates nothing (ucma_create_id).
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  ids_.emplace(id.handle, id);
  return 0;
}

void ConnectionManager::destroy(uint32_t handle) {
  const auto found = ids_.find(handle);
  if (found == ids_.end()) return;
  CmId& id = found->second;
  leave_connection(id);
  // A listener's socket, and its entry in the fabric's table, go with it,
  // also when a device removal moved it out of listening.
  if (id.state == IdState::kListen || listening_.count(id.handle) != 0) publish_listener(id, false);
  // Events not yet taken go with the id (ucma_destroy_private_ctx); a
  // listener's unread CONNECT_REQUESTs take their children with them
  // (ucma_cleanup_ctx_events), which reject their requests.
  std::vector<uint32_t> children;
  if (const auto file = files_.find(id.file); file != files_.end()) {
    std::erase_if(file->second->events, [&](const PendingEvent& event) {
      if (event.charged != handle) return false;
      if (event.connect_request) children.push_back(event.response.id);
      return true;
    });
    file->second->update_readiness();
  }
  std::erase_if(delayed_, [&](const auto& held) {
    if (held.second.event.charged != handle) return false;
    if (held.second.event.connect_request) children.push_back(held.second.event.response.id);
    return true;
  });
  forget_multicasts(handle);
  ids_.erase(found);
  timewait_.erase(handle);
  for (uint32_t child : children) destroy(child);
}

int ConnectionManager::destroy_id(int fd, const rdma_ucm_destroy_id& command, uint16_t out) {
  if (out < sizeof(rdma_ucm_destroy_id_resp)) return ENOSPC;
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  rdma_ucm_destroy_id_resp response{};
  response.events_reported = id->events_reported;
  destroy(command.id);
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  return 0;
}

int ConnectionManager::port_conflict(const CmId& binding, const sockaddr_storage& address,
                                     bool reuse) const {
  const uint16_t port = port_of(address);
  for (const auto& [handle, other] : ids_) {
    if (handle == binding.handle || other.port_space != binding.port_space) continue;
    if (other.state == IdState::kIdle || other.state == IdState::kDestroying) continue;
    if (port_of(other.source.address) != port) continue;
    // cma_check_port, in its order: both asked for REUSEADDR; both are
    // AF-only and of different families; either is the wildcard (loopback
    // included); the same address; different specific addresses share.
    if (reuse && other.reuse_address) continue;
    if (af_only(binding, address) && af_only(other, other.source.address) &&
        address.ss_family != other.source.address.ss_family)
      continue;
    if (binds_no_device(address) || binds_no_device(other.source.address)) return EADDRNOTAVAIL;
    if (same_address(address, other.source.address)) return EADDRINUSE;
  }
  // The other members' listeners: one host, one port space (the fabric's
  // addresses are all this host's, local_binding), cma_check_port's rules.
  if (wire::Endpoint* endpoint = fabric_.endpoint())
    for (const auto& [member, entry] : endpoint->others_listeners()) {
      if (static_cast<uint16_t>(entry >> 32) != binding.port_space ||
          static_cast<uint16_t>(entry) != port)
        continue;
      const bool other_v6 = (entry & kListenerIpv6) != 0;
      if (af_only(binding, address) && (entry & kListenerAfOnly) != 0 &&
          other_v6 != (address.ss_family == AF_INET6))
        continue;
      const uint16_t other = listener_address(entry);
      if (other == 0 || binds_no_device(address)) return EADDRNOTAVAIL;
      if (other == address_code(address)) return EADDRINUSE;
    }
  return 0;
}

std::optional<uint32_t> ConnectionManager::listening_member(uint16_t port_space, uint16_t port,
                                                            const sockaddr_storage& destination) {
  Fabric& fabric = fabric_;
  for (const auto& device : fabric.devices())
    if (listener_for(port_space, port, destination, device->index()) != nullptr)
      return fabric.member();
  wire::Endpoint* endpoint = fabric.endpoint();
  if (endpoint == nullptr) return std::nullopt;
  const bool v6 = destination.ss_family == AF_INET6;
  const uint16_t asked = address_code(destination);
  for (const auto& [member, entry] : endpoint->others_listeners()) {
    if (static_cast<uint16_t>(entry >> 32) != port_space || static_cast<uint16_t>(entry) != port)
      continue;
    if ((entry & kListenerAfOnly) != 0 && ((entry & kListenerIpv6) != 0) != v6) continue;
    // On the wildcard it hears every address; on one, that one only.
    if (listener_address(entry) != 0 && listener_address(entry) != asked) continue;
    return member;
  }
  return std::nullopt;
}

void ConnectionManager::publish_listener(CmId& id, bool listening) {
  if (listening)
    listening_.emplace(id.handle, ListeningSocket(id.handle));
  else
    listening_.erase(id.handle);
  wire::Endpoint* endpoint = fabric_.endpoint();
  if (endpoint == nullptr) return;
  const uint64_t entry =
      listener_entry(id.port_space, port_of(id.source.address), af_only(id, id.source.address),
                     id.source.address.ss_family == AF_INET6,
                     binds_no_device(id.source.address) ? 0 : address_code(id.source.address));
  if (listening)
    id.published = endpoint->add_listener(entry);
  else if (id.published)
    endpoint->remove_listener(entry);
}

bool ConnectionManager::af_only(const CmId& id, const sockaddr_storage& address) {
  // rdma_bind_addr's default when the option was never set: an IPv4 id is
  // AF-only, an IPv6 one as net.ipv6.bindv6only says (0 by default).
  if (id.af_only) return *id.af_only;
  return address.ss_family == AF_INET;
}

uint16_t ConnectionManager::ephemeral_port(uint16_t port_space) const {
  // The kernel draws from net.ipv4.ip_local_port_range (32768-60999 by
  // default) at a random offset; here the first free one in order, so a
  // run names the same ports every time.
  for (uint32_t port = 32768; port <= 60999; ++port) {
    bool used = false;
    for (const auto& [handle, id] : ids_)
      used |= id.port_space == port_space && port_of(id.source.address) == port &&
              id.state != IdState::kIdle;
    if (!used) return static_cast<uint16_t>(port);
  }
  return 0;
}

int ConnectionManager::bind(int fd, uint32_t handle, const sockaddr* address, std::size_t size) {
  int error = 0;
  CmId* id = find(fd, handle, error);
  if (id == nullptr) return error;
  if (size == 0) return EAFNOSUPPORT;
  // rdma_bind_addr: only an idle id binds.
  if (id->state != IdState::kIdle) return EINVAL;
  std::optional<Binding> binding = local_binding(fabric_, address);
  if (!binding) return EADDRNOTAVAIL;  // rdma_translate_ip: no device has it
  if (port_of(binding->address) == 0) {
    const uint16_t port = ephemeral_port(id->port_space);
    if (port == 0) return EADDRNOTAVAIL;
    set_port(binding->address, port);
  } else if (const int conflict = port_conflict(*id, binding->address, id->reuse_address)) {
    return conflict;
  }
  id->source = *binding;
  id->state = IdState::kAddrBound;
  return 0;
}

int ConnectionManager::listen(int fd, const rdma_ucm_listen& command) {
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  // rdma_listen: an idle id binds to the any address first (IPv4).
  if (id->state == IdState::kIdle) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (int bound = bind(fd, command.id, reinterpret_cast<const sockaddr*>(&any), sizeof any))
      return bound;
  }
  if (id->state != IdState::kAddrBound) return EINVAL;
  // cma_check_port again with REUSEADDR ignored: ids that shared the port
  // by REUSEADDR may be bound together, but only one listens; on success
  // the flag is cleared.
  if (const int conflict = port_conflict(*id, id->source.address, /*reuse=*/false)) return conflict;
  id->reuse_address = false;
  id->backlog =
      command.backlog > 0 && command.backlog < kMaxBacklog ? command.backlog : kMaxBacklog;
  id->state = IdState::kListen;
  publish_listener(*id, true);
  return 0;
}

int ConnectionManager::set_option(int fd, const rdma_ucm_set_option& command) {
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  if (command.optval == 0) return EFAULT;
  const void* value = reinterpret_cast<const void*>(static_cast<uintptr_t>(command.optval));
  if (command.level != RDMA_OPTION_ID) return ENOSYS;  // RDMA_OPTION_IB_PATH: not yet
  // ucma_set_option_id: each option's length is exact.
  switch (command.optname) {
    case RDMA_OPTION_ID_TOS:
      if (command.optlen != sizeof(uint8_t)) return EINVAL;
      id->tos = *static_cast<const uint8_t*>(value);
      return 0;
    case RDMA_OPTION_ID_REUSEADDR: {
      if (command.optlen != sizeof(int)) return EINVAL;
      int reuse;
      std::memcpy(&reuse, value, sizeof reuse);
      // rdma_set_reuseaddr: set (not cleared) on any id but a listener, or
      // anything on an idle one.
      if (!((reuse != 0 && id->state != IdState::kListen) || id->state == IdState::kIdle))
        return EINVAL;
      id->reuse_address = reuse != 0;
      return 0;
    }
    case RDMA_OPTION_ID_AFONLY: {
      if (command.optlen != sizeof(int)) return EINVAL;
      // rdma_set_afonly: before the id listens or resolves.
      if (id->state != IdState::kIdle && id->state != IdState::kAddrBound) return EINVAL;
      int only;
      std::memcpy(&only, value, sizeof only);
      id->af_only = only != 0;
      return 0;
    }
    case RDMA_OPTION_ID_ACK_TIMEOUT:
      if (command.optlen != sizeof(uint8_t)) return EINVAL;
      // rdma_set_ack_timeout: connected QPs only.
      if (id->qp_type != IBV_QPT_RC && id->qp_type != IBV_QPT_XRC_SEND) return EINVAL;
      id->ack_timeout = *static_cast<const uint8_t*>(value);
      return 0;
    default:
      return ENOSYS;
  }
}

void ConnectionManager::report(CmId& id, CmEvent event, int status, const rdma_ucm_conn_param* conn,
                               const rdma_ucm_ud_param* ud) {
  // ucma_event_handler: an id without a uid (a child not accepted yet)
  // gets no events.
  if (id.uid == 0) return;
  const auto file = files_.find(id.file);
  if (file == files_.end()) return;
  PendingEvent pending;
  pending.charged = id.handle;
  pending.response.uid = id.uid;
  pending.response.id = id.handle;
  pending.response.event = static_cast<uint32_t>(event);
  pending.response.status = static_cast<uint32_t>(status);
  if (conn != nullptr) pending.response.param.conn = *conn;
  if (ud != nullptr) pending.response.param.ud = *ud;
  push_event(*file->second, pending);
}

void ConnectionManager::push_event(CmFile& file, const PendingEvent& event) {
  file.events.push_back(event);
  file.update_readiness();
  fabric_.notify_waiters();
}

bool ConnectionManager::expects_messages() const {
  const uint32_t own = fabric_.member();
  for (const auto& [handle, id] : ids_)
    if (id.cm_id && id.peer.member != own && id.connection != ConnectionState::kNone &&
        id.connection != ConnectionState::kTimewait)
      return true;
  return false;
}

int ConnectionManager::get_event(int fd, const rdma_ucm_get_event& command, uint16_t out,
                                 std::unique_lock<std::mutex>& guard) {
  // ucma_get_event: the response up to `reserved` must fit.
  if (out < offsetof(rdma_ucm_event_resp, reserved)) return ENOSPC;
  const CmFile* waited_on = files_.at(fd).get();
  // Closed by another thread meanwhile (or its descriptor reused by a new
  // file): the kernel's file lives on while a write holds it, with no ids
  // and no events, so the wait never ends (rping's CM thread, blocked in
  // rdma_get_cm_event when the main thread destroys the channel, stays
  // blocked until the process exits).
  if (int error = wait_for(fabric_, guard, waited_on->readiness.nonblocking(), [&] {
        const auto found = files_.find(fd);
        return found != files_.end() && found->second.get() == waited_on &&
               !found->second->events.empty();
      }))
    return error;
  CmFile& file = *files_.at(fd);
  const PendingEvent event = file.events.front();
  // On a fault the event stays queued.
  if (!write_response(command.response, &event.response,
                      std::min<std::size_t>(out, sizeof event.response)))
    return EFAULT;
  file.events.pop_front();
  file.update_readiness();
  file.last_read = event;
  count_read(event, +1);
  if (auto id = ids_.find(event.charged); id != ids_.end())
    if (event.connect_request) ++id->second.backlog;  // the listener may queue one more
  // A child whose request was read is the application's now: destroying
  // the listener no longer takes it.
  if (event.connect_request)
    if (auto child = ids_.find(event.response.id); child != ids_.end())
      child->second.listener.reset();
  return 0;
}

void ConnectionManager::send(const Message& message) {
  if (message.target.member == fabric_.member()) {
    local_.push_back(message);
    return;
  }
  if (!send_to_member(fabric_, message) && message.kind == MessageKind::kReq) {
    // No member holds that index: nobody answers the REQ, and its retries
    // run out (IBA 12.6.5: after max_cm_retries, UNREACHABLE).
    Message unreachable = message;
    unreachable.kind = MessageKind::kUnreachable;
    unreachable.remote_id = message.local_id;
    std::swap(unreachable.sender, unreachable.target);
    local_.push_back(unreachable);
  }
}

void ConnectionManager::deliver_local() {
  if (delivering_) return;  // the outer call goes on with what is queued
  delivering_ = true;
  while (!local_.empty()) {
    const Message message = local_.front();
    local_.pop_front();
    receive(message);
  }
  delivering_ = false;
}

}  // namespace verbfault::sim::cm

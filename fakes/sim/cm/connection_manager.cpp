#include "connection_manager.h"

#include "cm_addresses.h"
#include "device.h"
#include "event_wait.h"
#include "fabric.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace verbfault::sim::cm {

namespace {

// The kernel reads the command and writes the response through user
// pointers (copy_from_user / copy_to_user); here they are the process's
// own, and a NULL one is the EFAULT the kernel would give.
bool write_response(uint64_t response, const void* what, std::size_t size) {
  if (response == 0) return false;
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(response)), what, size);
  return true;
}

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

// A command's input, copied out as the kernel does (the header said `in`
// bytes follow; shorter than the structure: EINVAL).
template <class Command>
bool read_command(const uint8_t* input, uint16_t in, Command& command) {
  if (in < sizeof command) return false;
  std::memcpy(&command, input, sizeof command);
  return true;
}

// The kernel's default of net.rdma_ucm.max_backlog (ucma.c).
constexpr uint32_t kMaxBacklog = 1024;

}  // namespace

ConnectionManager& ConnectionManager::get() {
  static ConnectionManager* manager = new ConnectionManager;  // lives to _exit
  return *manager;
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
  // ucma_close: every id of the file goes with it.
  for (auto it = ids_.begin(); it != ids_.end();)
    it = it->second.file == fd ? ids_.erase(it) : std::next(it);
  // The eventfd is the application's descriptor: close(2) closes it, not
  // the ReadinessFd.
  found->second->readiness.release();
  files_.erase(found);
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

int ConnectionManager::execute(int fd, const uint8_t* buffer, std::size_t length,
                               std::unique_lock<std::mutex>& guard) {
  // ucma_write's checks, in its order.
  rdma_ucm_cmd_hdr header;
  if (length < sizeof header) return EINVAL;
  std::memcpy(&header, buffer, sizeof header);
  if (header.cmd > RDMA_USER_CM_CMD_JOIN_MCAST) return EINVAL;
  if (header.in + sizeof header > length) return EINVAL;
  const uint8_t* input = buffer + sizeof header;
  switch (header.cmd) {
    case RDMA_USER_CM_CMD_CREATE_ID: {
      rdma_ucm_create_id command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return create_id(fd, command, header.out);
    }
    case RDMA_USER_CM_CMD_DESTROY_ID: {
      rdma_ucm_destroy_id command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return destroy_id(fd, command, header.out);
    }
    case RDMA_USER_CM_CMD_BIND_IP: {
      rdma_ucm_bind_ip command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return bind(fd, command.id, reinterpret_cast<const sockaddr*>(&command.addr),
                  address_size(reinterpret_cast<const sockaddr*>(&command.addr)));
    }
    case RDMA_USER_CM_CMD_BIND: {
      rdma_ucm_bind command;
      if (!read_command(input, header.in, command)) return EINVAL;
      const auto* address = reinterpret_cast<const sockaddr*>(&command.addr);
      // ucma_bind: the size must be the family's.
      if (command.addr_size != address_size(address) || command.reserved != 0) return EINVAL;
      return bind(fd, command.id, address, command.addr_size);
    }
    case RDMA_USER_CM_CMD_LISTEN: {
      rdma_ucm_listen command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return listen(fd, command);
    }
    case RDMA_USER_CM_CMD_QUERY_ROUTE: {
      rdma_ucm_query command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return query_route(fd, command, header.out);
    }
    case RDMA_USER_CM_CMD_QUERY: {
      rdma_ucm_query command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return query(fd, command, header.out);
    }
    case RDMA_USER_CM_CMD_SET_OPTION: {
      rdma_ucm_set_option command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return set_option(fd, command);
    }
    case RDMA_USER_CM_CMD_GET_EVENT: {
      rdma_ucm_get_event command;
      if (!read_command(input, header.in, command)) return EINVAL;
      return get_event(fd, command, header.out, guard);
    }
    default:
      // Address and route resolution, connecting and multicast are not
      // served yet: said, never pretended.
      return ENOSYS;
  }
}

int ConnectionManager::create_id(int fd, const rdma_ucm_create_id& command, uint16_t out) {
  if (out < sizeof(rdma_ucm_create_id_resp)) return ENOSPC;
  const std::optional<uint8_t> qp_type = qp_type_of(command.ps, command.qp_type);
  if (!qp_type) return EINVAL;
  CmId id;
  id.handle = next_handle_++;
  id.uid = command.uid;
  id.file = fd;
  id.port_space = command.ps;
  id.qp_type = *qp_type;
  rdma_ucm_create_id_resp response{};
  response.id = id.handle;
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  ids_.emplace(id.handle, id);
  return 0;
}

int ConnectionManager::destroy_id(int fd, const rdma_ucm_destroy_id& command, uint16_t out) {
  if (out < sizeof(rdma_ucm_destroy_id_resp)) return ENOSPC;
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  rdma_ucm_destroy_id_resp response{};
  response.events_reported = id->events_reported;
  // Events not yet taken go with the id (ucma_destroy_private_ctx).
  CmFile& file = *files_.at(fd);
  std::erase_if(file.events, [&](const PendingEvent& event) { return event.id == id->handle; });
  file.readiness.set_ready(!file.events.empty());
  ids_.erase(command.id);
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  return 0;
}

int ConnectionManager::port_conflict(const CmId& binding, const sockaddr_storage& address,
                                     bool reuse) const {
  const uint16_t port = port_of(address);
  for (const auto& [handle, other] : ids_) {
    if (handle == binding.handle || other.port_space != binding.port_space) continue;
    if (other.state != IdState::kAddrBound && other.state != IdState::kListen) continue;
    if (port_of(other.source.address) != port) continue;
    // cma_check_port, in its order: both asked for REUSEADDR; both are
    // AF-only and of different families; either is the wildcard (loopback
    // included); the same address; different specific addresses share.
    if (reuse && other.reuse_address) continue;
    if (af_only(binding, address) && af_only(other, other.source.address) &&
        address.ss_family != other.source.address.ss_family)
      continue;
    if (is_any(address) || is_any(other.source.address)) return EADDRNOTAVAIL;
    if (same_address(address, other.source.address)) return EADDRINUSE;
  }
  return 0;
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
              (id.state == IdState::kAddrBound || id.state == IdState::kListen);
    if (!used) return static_cast<uint16_t>(port);
  }
  return 0;
}

int ConnectionManager::bind(int fd, uint32_t handle, const sockaddr* address, std::size_t size) {
  int error = 0;
  CmId* id = find(fd, handle, error);
  if (id == nullptr) return error;
  if (size == 0) return EAFNOSUPPORT;  // AF_IB and unknown families (cm_addresses.h)
  // rdma_bind_addr: only an idle id binds.
  if (id->state != IdState::kIdle) return EINVAL;
  std::optional<Binding> binding = local_binding(address);
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
  return 0;
}

int ConnectionManager::query(int fd, const rdma_ucm_query& command, uint16_t out) {
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  if (command.option != RDMA_USER_CM_QUERY_ADDR) return ENOSYS;  // paths: not yet
  if (out < sizeof(rdma_ucm_query_addr_resp)) return ENOSPC;
  rdma_ucm_query_addr_resp response{};
  Fabric& fabric = Fabric::get();
  if (id->source.device && *id->source.device < static_cast<int>(fabric.devices().size())) {
    const Device& device = *fabric.devices()[static_cast<std::size_t>(*id->source.device)];
    response.node_guid = device.profile().device.node_guid;
    response.port_num = id->source.port;
    response.pkey = 0xffff;
    response.ibdev_index = static_cast<uint32_t>(device.index());
  } else {
    response.ibdev_index = ~uint32_t{0};  // ucma_query_addr: no device yet
  }
  response.src_size = static_cast<uint16_t>(address_size(id->source.address));
  std::memcpy(&response.src_addr, &id->source.address, response.src_size);
  response.dst_size = static_cast<uint16_t>(address_size(id->destination));
  std::memcpy(&response.dst_addr, &id->destination, response.dst_size);
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  return 0;
}

int ConnectionManager::query_route(int fd, const rdma_ucm_query& command, uint16_t out) {
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  // ucma_query_route: a response without ibdev_index is an older kernel's.
  if (out < offsetof(rdma_ucm_query_route_resp, ibdev_index)) return ENOSPC;
  rdma_ucm_query_route_resp response{};
  std::memcpy(&response.src_addr, &id->source.address,
              std::min(sizeof response.src_addr, address_size(id->source.address)));
  std::memcpy(&response.dst_addr, &id->destination,
              std::min(sizeof response.dst_addr, address_size(id->destination)));
  Fabric& fabric = Fabric::get();
  if (id->source.device && *id->source.device < static_cast<int>(fabric.devices().size())) {
    const Device& device = *fabric.devices()[static_cast<std::size_t>(*id->source.device)];
    response.node_guid = device.profile().device.node_guid;
    response.port_num = id->source.port;
    response.ibdev_index = static_cast<uint32_t>(device.index());
    // The source GID of the port the address is on (cma_query_ib_route
    // and its RoCE counterpart report it without a path).
    const ibv_gid gid = source_gid(device, id->source.address);
    std::memcpy(response.ib_route[0].sgid, gid.raw, sizeof gid.raw);
    response.ib_route[0].pkey = htobe16(0xffff);
  }
  // No path before the route is resolved (num_paths 0).
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(command.response)), &response,
              std::min<std::size_t>(out, sizeof response));
  return command.response == 0 ? EFAULT : 0;
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
      // rdma_set_reuseaddr: only before the id is bound.
      if (id->state != IdState::kIdle) return EINVAL;
      int reuse;
      std::memcpy(&reuse, value, sizeof reuse);
      id->reuse_address = reuse != 0;
      return 0;
    }
    case RDMA_OPTION_ID_AFONLY: {
      if (command.optlen != sizeof(int)) return EINVAL;
      if (id->state != IdState::kIdle) return EINVAL;
      int only;
      std::memcpy(&only, value, sizeof only);
      id->af_only = only != 0;
      return 0;
    }
    case RDMA_OPTION_ID_ACK_TIMEOUT:
      if (command.optlen != sizeof(uint8_t)) return EINVAL;
      id->ack_timeout = *static_cast<const uint8_t*>(value);
      return 0;
    default:
      return ENOSYS;
  }
}

int ConnectionManager::get_event(int fd, const rdma_ucm_get_event& command, uint16_t out,
                                 std::unique_lock<std::mutex>& guard) {
  if (out < sizeof(rdma_ucm_event_resp)) return ENOSPC;
  CmFile* file = files_.at(fd).get();
  if (int error = wait_for(guard, file->readiness.nonblocking(), [&] {
        // The file may be closed by another thread meanwhile.
        const auto found = files_.find(fd);
        return found == files_.end() || !found->second->events.empty();
      }))
    return error;
  const auto found = files_.find(fd);
  if (found == files_.end()) return EBADF;
  file = found->second.get();
  PendingEvent event = file->events.front();
  file->events.pop_front();
  file->readiness.set_ready(!file->events.empty());
  event.response.id = event.id;
  if (auto id = ids_.find(event.id); id != ids_.end()) ++id->second.events_reported;
  if (!write_response(command.response, &event.response, sizeof event.response)) return EFAULT;
  return 0;
}

}  // namespace verbfault::sim::cm

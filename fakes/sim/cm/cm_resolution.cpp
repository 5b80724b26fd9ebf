// Address and route resolution, and the queries of what an id resolved to
// (rdma_resolve_addr, rdma_resolve_route, ucma_query_*; cma.c, addr.c).
// The fabric's addresses are a plan (fabric_address.h), so resolving one
// needs no ARP: it is known at once, and the event is queued by the
// command itself, as the kernel queues it for a loopback address.
#include "cm_addresses.h"
#include "connection_manager.h"
#include "device.h"
#include "fabric.h"
#include "user_memory.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace verbfault::sim::cm {

namespace {

// The address of the plan for `node` as the port's GID: RoCE's entry of
// the IPv4 address (IBTA A17.4.5), InfiniBand's GID 0 (the port GUID).
ibv_gid gid_of(const FabricNode& node, bool ethernet) {
  return ethernet ? ipv4_mapped_gid(ipv4_of(node.member, node.device))
                  : link_local_gid(ib_guid_of(node.member, node.device));
}

void copy_address(void* to, std::size_t room, const sockaddr_storage& address) {
  std::memcpy(to, &address, std::min(room, address_size(address)));
}

}  // namespace

const Device& ConnectionManager::device_at(int index) const {
  return *fabric_.devices()[static_cast<std::size_t>(index)];
}

Path ConnectionManager::path_to(const Device& port, const CmId& id, const FabricNode& target,
                                uint16_t dlid, const ibv_gid& dgid, uint8_t mtu) {
  Path path;
  path.target = target;
  path.dlid = dlid;
  path.dgid = dgid;
  path.mtu = std::min(mtu, static_cast<uint8_t>(port.profile().port.active_mtu));
  path.hop_limit = port.ethernet() ? 64 : 0;  // IPv4's default TTL on RoCE
  // The packet lifetime: the SA's answer on InfiniBand (a fabric of one
  // switch hop: 2^14 * 4.096 ns, about 67 ms, a typical subnet manager's
  // value), CMA_IBOE_PACKET_LIFETIME (18) on RoCE, or the id's ack_timeout - 1.
  if (id.ack_timeout && *id.ack_timeout > 0)
    path.packet_life_time = static_cast<uint8_t>(*id.ack_timeout - 1);
  else
    path.packet_life_time = port.ethernet() ? 18 : 14;
  return path;
}

MessageNode ConnectionManager::own_node(int device_index) const {
  Fabric& fabric = fabric_;
  const Device& device = device_at(device_index);
  MessageNode node;
  node.member = fabric.member();
  node.device = device_index;
  node.lid = device.lid();
  node.gid = gid_of(FabricNode{fabric.member(), device_index}, device.ethernet());
  return node;
}

int ConnectionManager::resolve(int fd, uint32_t handle, const sockaddr* source,
                               const sockaddr* destination, uint32_t timeout_ms) {
  (void)timeout_ms;  // nothing waits for ARP: the plan's addresses are known
  int error = 0;
  CmId* id = find(fd, handle, error);
  if (id == nullptr) return error;
  sockaddr_storage target_address{};
  std::memcpy(&target_address, destination, address_size(destination));
  // rdma_resolve_addr: an idle id is bound first, to the source given or to
  // the wildcard of the destination's family (port 0: an ephemeral one);
  // a bound id keeps its binding.
  if (id->state == IdState::kIdle) {
    sockaddr_storage any{};
    any.ss_family = target_address.ss_family;
    const sockaddr* bind_to = source != nullptr ? source : reinterpret_cast<const sockaddr*>(&any);
    if (int bound = bind(fd, handle, bind_to, address_size(bind_to))) return bound;
  } else if (id->state != IdState::kAddrBound) {
    return EINVAL;
  }
  if (id->source.address.ss_family != target_address.ss_family) return EINVAL;

  Fabric& fabric = fabric_;
  if (fabric.devices().empty()) return ENODEV;
  std::optional<FabricNode> target;
  if (binds_no_device(target_address)) {
    // cma_resolve_loopback: the id's port, or the first active one
    // (cma_bind_loopback); the source address becomes loopback's, its port
    // kept. The destination is this host: a listener of another process on
    // the fabric is on it too (listening_member), else this process.
    if (!id->source.device) {
      id->source.device = 0;
      for (const auto& device : fabric.devices())
        if (device->port().state == IBV_PORT_ACTIVE) {
          id->source.device = device->index();
          break;
        }
      id->source.port = 1;
    }
    const uint16_t port = port_of(id->source.address);
    if (target_address.ss_family == AF_INET6) {
      auto& in6 = reinterpret_cast<sockaddr_in6&>(id->source.address);
      in6.sin6_addr = in6addr_loopback;
    } else {
      reinterpret_cast<sockaddr_in&>(id->source.address).sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    set_port(id->source.address, port);
    const std::optional<uint32_t> member =
        listening_member(id->port_space, port_of(target_address), target_address);
    target = FabricNode{member.value_or(fabric.member()),
                        member && *member != fabric.member() ? 0 : *id->source.device};
  } else if (is_multicast(target_address)) {
    // addr4_resolve/addr6_resolve route a group address out of the port
    // the id is bound to, or the host's route for multicast; its hardware
    // address is the group's mapping (fetch_ha: no neighbour is asked).
    // The fabric's multicast route leaves by this member's first active
    // port. rdma_join_multicast(3) follows; a route to a group is none.
    if (!id->source.device) {
      int device = 0;
      for (const auto& candidate : fabric.devices())
        if (candidate->port().state == IBV_PORT_ACTIVE) {
          device = candidate->index();
          break;
        }
      const uint16_t port = port_of(id->source.address);
      id->source.address = address_of(fabric.member(), device, target_address.ss_family);
      set_port(id->source.address, port);
      id->source.device = device;
      id->source.port = 1;
    }
    target = FabricNode{fabric.member(), *id->source.device};
  } else if (const std::optional<FabricNode> node = node_of_address(target_address)) {
    // The member that listens on the address and port (one host: any
    // process may listen on any of its addresses), else the address's own.
    const std::optional<uint32_t> member =
        listening_member(id->port_space, port_of(target_address), target_address);
    target = FabricNode{member.value_or(node->member), node->device};
    if (!id->source.device) {
      // The routing-selected source: this member's port of the same index
      // (the fabric's subnets are one per device index), else its first.
      const int device =
          node->device < static_cast<int>(fabric.devices().size()) ? node->device : 0;
      const uint16_t port = port_of(id->source.address);
      id->source.address = address_of(fabric.member(), device, target_address.ss_family);
      set_port(id->source.address, port);
      id->source.device = device;
      id->source.port = 1;
    }
  }
  id->destination = target_address;
  if (!target) {
    // addr_handler: the route leaves by a netdev no RDMA port carries
    // (cma_acquire_dev_by_src_ip): ADDR_ERROR -ENODEV, the id bound as
    // before, so that it may try again.
    report(*id, CmEvent::kAddrError, -ENODEV);
    return 0;
  }
  if (fault_ == Fault::kAddrError) {
    // The harness's cm_addr_error: the neighbour's hardware address never
    // came (no ARP reply; on IPoIB no answer either): addr.c's request
    // times out, ADDR_ERROR -ETIMEDOUT, the id bound as before.
    report(*id, CmEvent::kAddrError, -ETIMEDOUT);
    return 0;
  }
  id->target = target;
  id->state = IdState::kAddrResolved;
  report(*id, CmEvent::kAddrResolved, 0);
  return 0;
}

int ConnectionManager::resolve_route(int fd, const rdma_ucm_resolve_route& command) {
  int error = 0;
  CmId* id = find_with_device(fd, command.id, error);
  if (id == nullptr) return error;
  if (command.timeout_ms == 0 || id->state != IdState::kAddrResolved || !id->target) return EINVAL;
  const Device& device = device_at(*id->source.device);
  // cma_resolve_iboe_route: a loopback id has no netdev bound, so no L2
  // address to reach: ENODEV (rping: "rdma_resolve_route: No such device").
  if (device.ethernet() && binds_no_device(id->destination)) return ENODEV;
  if (fault_ == Fault::kRouteError) {
    // The harness's cm_route_error. InfiniBand: the subnet administrator
    // never answers the path record query (cma_query_ib_route):
    // ROUTE_ERROR -ETIMEDOUT, the id back to ADDR_RESOLVED. RoCE resolves
    // the route locally and fails in the call itself: the port's netdev is
    // gone (cma_resolve_iboe_route: ENODEV), the id ADDR_RESOLVED still.
    if (device.ethernet()) return ENODEV;
    report(*id, CmEvent::kRouteError, -ETIMEDOUT);
    return 0;
  }
  id->path = path_to(device, *id, *id->target,
                     device.ethernet() ? 0 : lid_of(id->target->member, id->target->device),
                     gid_of(*id->target, device.ethernet()), IBV_MTU_4096);
  id->state = IdState::kRouteResolved;
  report(*id, CmEvent::kRouteResolved, 0);
  return 0;
}

void ConnectionManager::retarget_to_listener(CmId& id) {
  // An address of this host (loopback, or a fabric address: the members
  // are one machine's processes) reaches whichever process listens on it
  // when the request leaves, as the kernel's CM finds the listener when
  // the REQ arrives (cma_find_listener): the server may have listened
  // after the client resolved (rdma-core's rdmacm tests resolve first).
  if (!id.target || !id.path || !id.source.device) return;
  if (!binds_no_device(id.destination) && !node_of_address(id.destination)) return;
  const std::optional<uint32_t> member =
      listening_member(id.port_space, port_of(id.destination), id.destination);
  if (!member || *member == id.target->member) return;
  const int device = *member == fabric_.member() ? *id.source.device : id.target->device;
  id.target = FabricNode{*member, device};
  const Device& port = device_at(*id.source.device);
  id.path = path_to(port, id, *id.target, port.ethernet() ? 0 : lid_of(member.value(), device),
                    gid_of(*id.target, port.ethernet()), id.path->mtu);
}

int ConnectionManager::query(int fd, const rdma_ucm_query& command, uint16_t out) {
  int error = 0;
  CmId* id = find(fd, command.id, error);
  if (id == nullptr) return error;
  if (command.option != RDMA_USER_CM_QUERY_ADDR) return ENOSYS;  // PATH, GID: AF_IB's
  if (out < sizeof(rdma_ucm_query_addr_resp)) return ENOSPC;
  rdma_ucm_query_addr_resp response{};
  if (id->source.device) {
    const Device& device = device_at(*id->source.device);
    response.node_guid = device.profile().device.node_guid;
    response.port_num = id->source.port;
    response.pkey = htobe16(0xffff);
    response.ibdev_index = static_cast<uint32_t>(device.kernel_index());
  } else {
    response.ibdev_index = ~uint32_t{0};  // ucma_query_addr: no device yet
  }
  response.src_size = static_cast<uint16_t>(address_size(id->source.address));
  copy_address(&response.src_addr, sizeof response.src_addr, id->source.address);
  response.dst_size = static_cast<uint16_t>(address_size(id->destination));
  copy_address(&response.dst_addr, sizeof response.dst_addr, id->destination);
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
  copy_address(&response.src_addr, sizeof response.src_addr, id->source.address);
  copy_address(&response.dst_addr, sizeof response.dst_addr, id->destination);
  if (id->source.device) {
    const Device& device = device_at(*id->source.device);
    response.node_guid = device.profile().device.node_guid;
    response.port_num = id->source.port;
    response.ibdev_index = static_cast<uint32_t>(device.kernel_index());
    ib_user_path_rec& route = response.ib_route[0];
    const ibv_gid sgid = source_gid(device, id->source.address);
    std::memcpy(route.sgid, sgid.raw, sizeof sgid.raw);
    route.pkey = htobe16(0xffff);
    if (id->target) {
      // Without a path: the address's GIDs (ucma_copy_ib_route,
      // ucma_copy_iboe_route with no paths).
      const ibv_gid dgid = gid_of(*id->target, device.ethernet());
      std::memcpy(route.dgid, dgid.raw, sizeof dgid.raw);
    }
    if (id->path) {
      response.num_paths = 1;
      route.dlid = htobe16(id->path->dlid);
      route.slid = htobe16(device.ethernet() ? 0 : device.lid());
      route.reversible = 1;
      route.mtu = id->path->mtu;
      route.mtu_selector = 2;  // exactly
      route.hop_limit = id->path->hop_limit;
      route.traffic_class = id->tos.value_or(0);
      route.numb_path = 1;
      // route.rate 0: IB_RATE_PORT_CURRENT, as a RoCE route says.
      route.packet_life_time = id->path->packet_life_time;
      route.packet_life_time_selector = 2;
    }
  }
  if (command.response == 0) return EFAULT;
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(command.response)), &response,
              std::min<std::size_t>(out, sizeof response));
  return 0;
}

}  // namespace verbfault::sim::cm

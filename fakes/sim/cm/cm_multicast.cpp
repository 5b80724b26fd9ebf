// Multicast joins of UD ids (rdma_join_multicast(3), rdma_leave_multicast(3)),
// after the kernel's ucma_process_join / ucma_leave_multicast (ucma.c) and
// rdma_join_multicast / cma_iboe_join_multicast / cma_join_ib_multicast
// (cma.c). The join is the manager's part only: the MULTICAST_JOIN event
// gives the group's address vector, and librdmacm attaches the id's QP to
// the group with ibv_attach_mcast as it reads the event (ucma_process_join),
// which is what makes the device deliver (multicast.h).
#include "cm_addresses.h"
#include "connection_manager.h"
#include "device.h"
#include "fabric.h"
#include "multicast.h"
#include "user_memory.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

namespace verbfault::sim::cm {

namespace {

// The names of the sockets joins show (listening_socket.h) are apart from
// the ids': "@verbfault-cm/<pid>/<2^31 + join>".
constexpr uint32_t kMulticastSocketBase = 0x80000000u;

// The kernel's ENOTSUPP (include/linux/errno.h), which reaches userspace
// as it is: an IPv6 group on a RoCE v2 port (cma_iboe_join_multicast).
constexpr int kKernelNotSupported = 524;

// RoCE (cma_iboe_set_mgid): an IPv6 address is its own MGID; an IPv4 one
// is IPv4-mapped, ::ffff:a.b.c.d for RoCE v2 (the destination IP of the
// packets), ff0e::ffff:a.b.c.d for RoCE v1.
ibv_gid roce_mgid(const sockaddr_storage& address, bool v2) {
  ibv_gid mgid{};
  if (address.ss_family == AF_INET6) {
    std::memcpy(mgid.raw, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, 16);
    return mgid;
  }
  mgid.raw[0] = v2 ? 0 : 0xff;
  mgid.raw[1] = v2 ? 0 : 0x0e;
  mgid.raw[10] = 0xff;
  mgid.raw[11] = 0xff;
  std::memcpy(&mgid.raw[12], &reinterpret_cast<const sockaddr_in&>(address).sin_addr, 4);
  return mgid;
}

// InfiniBand (cma_set_mgid): an SA-assigned MGID given as IPv6
// (ff1x:a01b::) is taken as it is; any other address maps as IPoIB maps
// it (ip_ib_mc_map, ipv6_ib_mc_map) with the IPoIB broadcast address of
// the default partition (scope 2, P_Key 0xffff), and the RDMA CM's
// signature 0x01 in place of IPoIB's 0x1b for the UDP port space, so that
// the CM's groups are not IPoIB's.
ibv_gid ib_mgid(const sockaddr_storage& address, uint16_t port_space) {
  ibv_gid mgid{};
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
    uint32_t first;
    std::memcpy(&first, in6.s6_addr, 4);
    if ((ntohl(first) & 0xFFF0FFFF) == 0xFF10A01B) {
      std::memcpy(mgid.raw, in6.s6_addr, 16);
      return mgid;
    }
    mgid.raw[0] = 0xff;
    mgid.raw[1] = 0x12;
    mgid.raw[2] = 0x60;
    mgid.raw[3] = port_space == RDMA_PS_UDP ? 0x01 : 0x1b;
    mgid.raw[4] = 0xff;
    mgid.raw[5] = 0xff;
    std::memcpy(&mgid.raw[6], in6.s6_addr + 6, 10);
    return mgid;
  }
  const uint32_t v4 = ntohl(reinterpret_cast<const sockaddr_in&>(address).sin_addr.s_addr);
  mgid.raw[0] = 0xff;
  mgid.raw[1] = 0x12;
  mgid.raw[2] = 0x40;
  mgid.raw[3] = port_space == RDMA_PS_UDP ? 0x01 : 0x1b;
  mgid.raw[4] = 0xff;
  mgid.raw[5] = 0xff;
  mgid.raw[12] = static_cast<uint8_t>((v4 >> 24) & 0x0f);
  mgid.raw[13] = static_cast<uint8_t>(v4 >> 16);
  mgid.raw[14] = static_cast<uint8_t>(v4 >> 8);
  mgid.raw[15] = static_cast<uint8_t>(v4);
  return mgid;
}

// The MLID the subnet manager gives the group: on the simulated fabric a
// function of the MGID (FNV-1a folded into 0xC001..0xFFFE; 0xC000 is the
// IPoIB broadcast group's by opensm's custom), so that every member of the
// fabric, which has no SM to ask, agrees on it.
uint16_t mlid_of(const ibv_gid& mgid) {
  uint32_t hash = 2166136261u;
  for (uint8_t byte : mgid.raw) hash = (hash ^ byte) * 16777619u;
  return static_cast<uint16_t>(0xC001 + hash % (0xFFFE - 0xC001 + 1));
}

}  // namespace

int ConnectionManager::join_multicast(int fd, const rdma_ucm_join_mcast& command, uint16_t out) {
  // ucma_process_join, in its order.
  if (out < sizeof(rdma_ucm_create_id_resp)) return ENOSPC;
  const auto* address = reinterpret_cast<const sockaddr*>(&command.addr);
  if (command.addr_size != rdma_family_size(address)) return EINVAL;
  if (command.join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
      command.join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
    return EINVAL;
  int error = 0;
  CmId* id = find_with_device(fd, command.id, error);
  if (id == nullptr) return error;
  // rdma_join_multicast: an id bound to a device or with its address
  // resolved (not later), of a UD port space (Linux 6.3's check, "Allow UD
  // qp_type to join multicast only"; before it, an RC id's join went on
  // with an uninitialised Q_Key).
  if (id->state != IdState::kAddrBound && id->state != IdState::kAddrResolved) return EINVAL;
  if (id->qp_type != IBV_QPT_UD) return EINVAL;
  if (address->sa_family == kAfIb) return EAFNOSUPPORT;  // AF_IB is not served (cm_addresses.h)
  sockaddr_storage group{};
  std::memcpy(&group, address, command.addr_size);

  const Device& device = device_at(*id->source.device);
  rdma_ucm_ud_param ud{};
  ud.qp_num = multicast::kQpn;
  ud.qkey = kDefaultQkey;  // cma_set_default_qkey: RDMA_UDP_QKEY for UDP and IB
  ud.ah_attr.port_num = id->source.port;
  ud.ah_attr.is_global = 1;
  ibv_gid mgid{};
  if (device.ethernet()) {
    // cma_iboe_join_multicast on the port's default GID type, RoCE v2.
    if (is_any(group)) return EINVAL;
    if (group.ss_family == AF_INET6) return kKernelNotSupported;
    mgid = roce_mgid(group, true);
    ud.ah_attr.grh.hop_limit = 64;  // IPV6_DEFAULT_HOPLIMIT for RoCE v2 over IPv4
    const int index = device.find_gid(source_gid(device, id->source.address), IBV_GID_TYPE_ROCE_V2);
    ud.ah_attr.grh.sgid_index = static_cast<uint8_t>(index < 0 ? 0 : index);
  } else {
    // cma_join_ib_multicast: the SA's MCMemberRecord, an MLID, SL 0, and
    // hop limit 0 (the group is in the subnet); the source is GID 0.
    mgid = ib_mgid(group, id->port_space);
    ud.ah_attr.dlid = mlid_of(mgid);
  }
  std::memcpy(ud.ah_attr.grh.dgid, mgid.raw, sizeof mgid.raw);

  // ucma's multicast_table: the lowest free index.
  uint32_t handle = 0;
  for (const auto& [used, joined] : multicasts_) {
    if (used != handle) break;
    ++handle;
  }
  rdma_ucm_create_id_resp response{};
  response.id = handle;
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  Multicast& joined = multicasts_[handle];
  joined.id = id->handle;
  joined.uid = command.uid;
  joined.address = group;
  if (command.join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER)
    joined.shown = ListeningSocket(kMulticastSocketBase + handle);

  // ucma_event_handler: a multicast event names the join (its uid and id).
  PendingEvent pending;
  pending.charged = id->handle;
  pending.multicast = handle;
  pending.response.uid = command.uid;
  pending.response.id = handle;
  pending.response.event = static_cast<uint32_t>(CmEvent::kMulticastJoin);
  pending.response.param.ud = ud;
  if (const auto file = files_.find(id->file); file != files_.end())
    push_event(*file->second, pending);
  return 0;
}

int ConnectionManager::leave_multicast(int fd, const rdma_ucm_destroy_id& command, uint16_t out) {
  if (out < sizeof(rdma_ucm_destroy_id_resp)) return ENOSPC;
  const auto found = multicasts_.find(command.id);
  if (found == multicasts_.end()) return ENOENT;
  const auto id = ids_.find(found->second.id);
  if (id == ids_.end() || id->second.file != fd) return EINVAL;
  // ucma_cleanup_mc_events: the join's events not yet read go with it.
  if (const auto file = files_.find(fd); file != files_.end()) {
    std::erase_if(file->second->events,
                  [&](const PendingEvent& event) { return event.multicast == command.id; });
    file->second->update_readiness();
  }
  std::erase_if(delayed_,
                [&](const auto& held) { return held.second.event.multicast == command.id; });
  rdma_ucm_destroy_id_resp response{};
  response.events_reported = found->second.events_reported;
  multicasts_.erase(found);
  if (!write_response(command.response, &response, sizeof response)) return EFAULT;
  return 0;
}

void ConnectionManager::forget_multicasts(uint32_t handle) {
  std::erase_if(multicasts_, [&](const auto& joined) { return joined.second.id == handle; });
}

void ConnectionManager::count_read(const PendingEvent& event, int step) {
  const auto add = [step](uint32_t& count) {
    if (step > 0) ++count;
    else if (count > 0) --count;
  };
  // ucma_get_event: uevent->ctx->events_reported++, and uevent->mc's too
  // for a join's event; librdmacm's rdma_ack_cm_event completes both (the
  // id's for rdma_destroy_id, the join's for rdma_leave_multicast).
  if (const auto id = ids_.find(event.charged); id != ids_.end()) add(id->second.events_reported);
  if (event.multicast)
    if (const auto joined = multicasts_.find(*event.multicast); joined != multicasts_.end())
      add(joined->second.events_reported);
}

}  // namespace verbfault::sim::cm

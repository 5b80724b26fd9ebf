// Multicast groups of UD QPs on the simulated fabric (IBA 10.5: a UD QP
// attached to a multicast group receives every message sent to the
// group's MGID/MLID; ibv_attach_mcast(3)).
//
// A group is its MGID (and, on InfiniBand, its MLID): the simulated
// fabric needs no subnet manager to form it, a QP is in the group from
// its ibv_attach_mcast until its ibv_detach_mcast, as on an HCA whose
// port joined the group through the SA (librdmacm's rdma_join_multicast
// does that part). A message to the multicast QPN (0xFFFFFF) with an
// address vector naming a group reaches every attached QP of the sender's
// link layer in every member of the fabric, the sender's own QP included
// (the default of an HCA: mlx5 blocks that only on request,
// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, which the simulated device does not
// offer). Guarded by Fabric::mutex, as every QP.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace verbfault::sim {
class Device;
class Fabric;
class QueuePair;
}  // namespace verbfault::sim

namespace verbfault::sim::multicast {

// IBA 10.5.2.1 (Table 72): the destination QP of a multicast message.
inline constexpr uint32_t kQpn = 0xFFFFFF;

// One attachment of a QP (the MGID and MLID ibv_attach_mcast gave).
struct Group {
  ibv_gid gid{};
  uint16_t lid = 0;
};

// Whether `gid` is a multicast GID: IPv6's ff00::/8, or an IPv4-mapped
// address of 224.0.0.0/4 (RoCE v2's groups; the kernel's
// rdma_is_multicast_addr).
bool is_group_gid(const ibv_gid& gid);

// ibv_attach_mcast / ibv_detach_mcast on `qp`: 0 or an errno, as the
// kernel's ib_uverbs_attach_mcast and ib_attach_mcast answer: EINVAL for
// a QP that is not UD, a GID that is not a group's, or (InfiniBand) an
// MLID outside the multicast range 0xC000..0xFFFE; attaching twice is 0;
// detaching a group the QP is not in is EINVAL.
int attach(QueuePair& qp, const ibv_gid& gid, uint16_t lid);
int detach(QueuePair& qp, const ibv_gid& gid, uint16_t lid);

// Whether a UD message to `remote_qpn` with address vector `ah`, sent from
// a port of `ethernet` link layer, goes to a group.
bool addressed(bool ethernet, const ibv_ah_attr& ah, uint32_t remote_qpn);

// The QPs of this process in the group `ah` names, on ports of `ethernet`
// link layer that are ACTIVE, that can receive (RTR, RTS, SQD, SQE), in
// QPN order: the group by its MGID when the address has a GRH, by its MLID
// otherwise (InfiniBand's switches forward by MLID).
std::vector<QueuePair*> receivers(Fabric& fabric, bool ethernet, const ibv_ah_attr& ah,
                                  uint16_t dlid);

}  // namespace verbfault::sim::multicast

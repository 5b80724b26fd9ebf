#include "multicast.h"

#include "context.h"
#include "device.h"
#include "fabric.h"
#include "queue_pair.h"

#include <algorithm>
#include <cstring>

namespace verbfault::sim::multicast {

namespace {

// IBA 4.1.1 (Table 3): multicast LIDs are 0xC000..0xFFFE; 0xFFFF is the
// permissive LID.
constexpr uint16_t kFirstLid = 0xC000;
constexpr uint16_t kPermissiveLid = 0xFFFF;

bool same_gid(const ibv_gid& a, const ibv_gid& b) {
  return std::memcmp(a.raw, b.raw, sizeof a.raw) == 0;
}

bool is_group_lid(uint16_t lid) {
  return lid >= kFirstLid && lid != kPermissiveLid;
}

bool can_receive(const QueuePair& qp) {
  const ibv_qp_state s = qp.state();
  return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE;
}

// ib_attach_mcast's checks (drivers/infiniband/core/verbs.c): the QP is
// UD, the GID a group's, and on an InfiniBand port the MLID a multicast
// LID (is_valid_mcast_lid; RoCE has no LIDs and takes any).
int check(QueuePair& qp, const ibv_gid& gid, uint16_t lid) {
  if (qp.type() != IBV_QPT_UD || !is_group_gid(gid)) return EINVAL;
  if (!qp.context().device().ethernet() && !is_group_lid(lid)) return EINVAL;
  return 0;
}

}  // namespace

bool is_group_gid(const ibv_gid& gid) {
  if (gid.raw[0] == 0xff) return true;
  // ::ffff:a.b.c.d with a.b.c.d in 224.0.0.0/4.
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, kMapped, sizeof kMapped) == 0 && (gid.raw[12] & 0xf0) == 0xe0;
}

int attach(QueuePair& qp, const ibv_gid& gid, uint16_t lid) {
  if (int err = check(qp, gid, lid)) return err;
  // ib_uverbs_attach_mcast: a QP already in the group stays in it once.
  for (const Group& group : qp.multicast_groups)
    if (group.lid == lid && same_gid(group.gid, gid)) return 0;
  // The device's limits (ibv_query_device(3): max_mcast_grp groups,
  // max_mcast_qp_attach QPs in one, max_total_mcast_qp_attach in all):
  // past them ENOMEM, as rxe_attach_mcast says (rxe_mcast.c).
  const ibv_device_attr& limits = qp.context().device().profile().device;
  uint64_t groups = 0, in_group = 0, total = 0;
  std::vector<Group> seen;
  const Device& device = qp.context().device();
  for (Context* context : qp.fabric().contexts()) {
    if (&context->device() != &device) continue;
    for (auto& [other, owned] : context->qps) {
      for (const Group& group : other->multicast_groups) {
        ++total;
        if (group.lid == lid && same_gid(group.gid, gid)) ++in_group;
        if (std::none_of(seen.begin(), seen.end(), [&](const Group& known) {
              return known.lid == group.lid && same_gid(known.gid, group.gid);
            }))
          seen.push_back(group);
      }
    }
  }
  groups = seen.size() + (in_group == 0 ? 1 : 0);
  if (groups > static_cast<uint64_t>(limits.max_mcast_grp) ||
      in_group + 1 > static_cast<uint64_t>(limits.max_mcast_qp_attach) ||
      total + 1 > static_cast<uint64_t>(limits.max_total_mcast_qp_attach))
    return ENOMEM;
  qp.multicast_groups.push_back({gid, lid});
  return 0;
}

int detach(QueuePair& qp, const ibv_gid& gid, uint16_t lid) {
  if (int err = check(qp, gid, lid)) return err;
  auto& groups = qp.multicast_groups;
  const auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& group) {
    return group.lid == lid && same_gid(group.gid, gid);
  });
  // ib_uverbs_detach_mcast: not attached is EINVAL.
  if (it == groups.end()) return EINVAL;
  groups.erase(it);
  return 0;
}

bool addressed(bool ethernet, const ibv_ah_attr& ah, uint32_t remote_qpn) {
  if (remote_qpn != kQpn) return false;
  if (ah.is_global && is_group_gid(ah.grh.dgid)) return true;
  return !ethernet && is_group_lid(ah.dlid);
}

std::vector<QueuePair*> receivers(Fabric& fabric, bool ethernet, const ibv_ah_attr& ah,
                                  uint16_t dlid) {
  std::vector<QueuePair*> found;
  const bool by_gid = ah.is_global != 0;
  for (Context* context : fabric.contexts()) {
    Device& device = context->device();
    if (device.ethernet() != ethernet || device.port().state != IBV_PORT_ACTIVE) continue;
    for (auto& [qp, owned] : context->qps) {
      if (qp->multicast_groups.empty() || !can_receive(*qp)) continue;
      const bool member = std::any_of(
          qp->multicast_groups.begin(), qp->multicast_groups.end(), [&](const Group& group) {
            return by_gid ? same_gid(group.gid, ah.grh.dgid) : group.lid == dlid;
          });
      if (member) found.push_back(qp);
    }
  }
  std::sort(found.begin(), found.end(),
            [](const QueuePair* a, const QueuePair* b) { return a->qpn() < b->qpn(); });
  return found;
}

}  // namespace verbfault::sim::multicast

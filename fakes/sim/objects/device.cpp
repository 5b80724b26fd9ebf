#include "device.h"

#include "fabric_address.h"
#include "system_files.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace verbfault::sim {

Device::Device(Fabric& fabric, int index, uint32_t member, DeviceProfile profile)
    : fabric_(fabric),
      index_(index), name_("vfsim" + std::to_string(index)), profile_(std::move(profile)) {
  port_ = profile_.port;
  readdress(member);

  handle_.owner = this;
  ibv_device& d = handle_.verbs;
  d.node_type = IBV_NODE_CA;
  d.transport_type = IBV_TRANSPORT_IB;
  std::snprintf(d.name, sizeof d.name, "%s", name_.c_str());
  // The uverbs character device and class directory the kernel would give
  // it (sim/system/system_files.h serves both).
  std::snprintf(d.dev_name, sizeof d.dev_name, "uverbs%d", uverbs_index(*this));
  std::snprintf(d.dev_path, sizeof d.dev_path, "/sys/class/infiniband_verbs/%s", d.dev_name);
  std::snprintf(d.ibdev_path, sizeof d.ibdev_path, "/sys/class/infiniband/%s", name_.c_str());
}

void Device::readdress(uint32_t member) {
  // GUIDs are kept in network byte order, as the kernel reports them. A
  // RoCE port's GUID is its MAC's EUI-64, as rxe and mlx5 derive it.
  const uint64_t guid = ethernet() ? eui64_of(member, index_) : ib_guid_of(member, index_);
  profile_.device.node_guid = htobe64(guid);
  profile_.device.sys_image_guid = htobe64(guid);
  if (ethernet()) {
    // IBTA A17.3: RoCE has no LIDs and no subnet manager; ibv_query_port
    // reports 0 for both (the kernel zeroes them for non-IB ports).
    profile_.port.lid = 0;
    profile_.port.sm_lid = 0;
  } else {
    profile_.port.lid = lid_of(member, index_);
    profile_.port.sm_lid = 1;
  }
  // The live port keeps its state; its addresses are the member's.
  port_.lid = profile_.port.lid;
  port_.sm_lid = profile_.port.sm_lid;
  gids_.clear();
  for (const GidSpec& spec : profile_.gids) {
    GidEntry entry;
    entry.type = spec.type;
    if (spec.address == GidAddress::kIpv4)
      entry.gid = ipv4_mapped_gid(ipv4_of(member, index_));
    else
      entry.gid = link_local_gid(guid);
    gids_.push_back(entry);
  }
}

ibv_gid Device::gid(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= gids_.size()) return ibv_gid{};
  return gids_[static_cast<size_t>(index)].gid;
}

ibv_gid_type Device::gid_type(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= gids_.size())
    return ethernet() ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB;
  return gids_[static_cast<size_t>(index)].type;
}

void Device::set_gid(int index, const ibv_gid& gid) {
  if (index < 0) return;
  const auto at = static_cast<size_t>(index);
  if (at >= gids_.size()) gids_.resize(at + 1, GidEntry{ibv_gid{}, gid_type(index)});
  gids_[at].gid = gid;
}

bool Device::gid_empty(int index) const {
  const ibv_gid g = gid(index);
  return g.global.subnet_prefix == 0 && g.global.interface_id == 0;
}

int Device::find_gid(const ibv_gid& wanted, std::optional<ibv_gid_type> type) const {
  const int entries = std::min<int>(static_cast<int>(gids_.size()), port_.gid_tbl_len);
  for (int i = 0; i < entries; ++i) {
    const GidEntry& entry = gids_[static_cast<size_t>(i)];
    if (gid_empty(i)) continue;  // an empty entry is no address
    if (std::memcmp(entry.gid.raw, wanted.raw, sizeof wanted.raw) == 0 &&
        (!type || entry.type == *type))
      return i;
  }
  return -1;
}

bool Device::valid_address(const ibv_ah_attr& ah) const {
  if (ah.port_num != 1) return false;
  if (!ah.is_global) return !ethernet();
  if (ah.grh.sgid_index >= port_.gid_tbl_len) return false;
  return !ethernet() || !gid_empty(ah.grh.sgid_index);
}

}  // namespace verbfault::sim

#include "device.h"

#include <cstdio>
#include <cstring>

namespace verbfault::sim {

Device::Device(int index, uint32_t member)
    : index_(index),
      name_("vfsim" + std::to_string(index)),
      profile_(DeviceProfile::standard(index, member)),
      port_(profile_.port) {
  handle_.owner = this;
  ibv_device& d = handle_.verbs;
  d.node_type = IBV_NODE_CA;
  d.transport_type = IBV_TRANSPORT_IB;
  std::snprintf(d.name, sizeof d.name, "%s", name_.c_str());
  std::snprintf(d.dev_name, sizeof d.dev_name, "uverbs-%s", name_.c_str());
  std::snprintf(d.dev_path, sizeof d.dev_path, "/sys/class/infiniband_verbs/uverbs-%s",
                name_.c_str());
  std::snprintf(d.ibdev_path, sizeof d.ibdev_path, "/sys/class/infiniband/%s", name_.c_str());
}

ibv_gid Device::gid(int index) const {
  if (auto it = gid_overrides_.find(index); it != gid_overrides_.end()) return it->second;
  ibv_gid gid{};
  if (index != 0) return gid;
  gid.global.subnet_prefix = htobe64(0xfe80'0000'0000'0000ull);
  gid.global.interface_id = profile_.device.node_guid;
  return gid;
}

}  // namespace verbfault::sim

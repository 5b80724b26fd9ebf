// The simulated devices as the kernel lays them out in sysfs and /dev, for
// the programs that look there instead of asking libibverbs: UCX checks
// /dev/infiniband/uverbsN and reads numa_node and gid_attrs; Open MPI
// checks /sys/class/infiniband; ibstat, ibstatus and libibumad read every
// port attribute from sysfs. The layout and each file's format are the
// kernel's (drivers/infiniband/core/sysfs.c, uverbs_main.c;
// Documentation/ABI/stable/sysfs-class-infiniband).
//
// The tree is computed from the devices when it is asked for (no copy to
// keep in step): a port brought down by a fault reads "1: DOWN".
#pragma once

#include "verbfault/sim/provider.h"

#include <string_view>

namespace verbfault::sim {

// Where the simulated devices' class and device directories are.
inline constexpr std::string_view kInfinibandClass = "/sys/class/infiniband";
inline constexpr std::string_view kVerbsClass = "/sys/class/infiniband_verbs";
inline constexpr std::string_view kInfinibandDevices = "/sys/devices/virtual/infiniband";
inline constexpr std::string_view kVerbsDevices = "/sys/devices/virtual/infiniband_verbs";
inline constexpr std::string_view kDeviceNodes = "/dev/infiniband";
// The connection manager's misc device (cm.h): its class link, and the
// device directory the link leads to. The class directory lists it alone
// (the real /sys/class/misc is not merged in: it lists only what is
// served, as for /sys/class/infiniband without rxe).
inline constexpr std::string_view kMiscClass = "/sys/class/misc/rdma_cm";
inline constexpr std::string_view kMiscDevices = "/sys/devices/virtual/misc/rdma_cm";

// The character device numbers of uverbs (include/rdma/ib_user_verbs.h:
// IB_UVERBS_MAJOR 231, IB_UVERBS_BASE_MINOR 192).
inline constexpr unsigned kUverbsMajor = 231;
inline constexpr unsigned kUverbsBaseMinor = 192;

class Device;
// The N of the device's /dev/infiniband/uverbsN: after the real devices'
// numbers, in device order.
int uverbs_index(const Device& device);

}  // namespace verbfault::sim

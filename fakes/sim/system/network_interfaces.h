// The IP interfaces behind the simulated ports (verbfault/sim/provider.h,
// network_interfaces()): what getifaddrs(3), if_nametoindex(3) and the
// SIOCGIF* ioctls show of them.
#pragma once

#include "verbfault/sim/provider.h"

namespace verbfault::sim {

class Device;

// Interface indexes of the simulated interfaces: far above the kernel's
// (which counts up from 1 as interfaces are made), so never one of them.
inline constexpr unsigned kInterfaceIndexBase = 0x10000;

// The interface behind `device`'s port (vfeth<N> on RoCE, vfib<N> on
// InfiniBand), as member `member` has it. Under Fabric::mutex.
NetworkInterface interface_of(const Device& device, uint32_t member);

}  // namespace verbfault::sim

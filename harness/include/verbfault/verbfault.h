// verbfault - deterministic fault injection for RDMA verbs programs.
//
// Link a test binary against verbfault::verbfault (it comes before
// libibverbs on the link line), or preload libverbfault.so into an
// unmodified binary: ibv_get_device_list(3) then also lists the simulated
// devices vfsim0, vfsim1, ... and every verbs call on them is served by the
// simulated provider. Calls on real devices reach libibverbs untouched.
#pragma once

namespace verbfault {

inline constexpr const char* kVersion = "0.1.0";

// Environment variables read by libverbfault.so.
// VERBFAULT_SIM_DEVICES: how many simulated devices to list (0..16, default 1).
inline constexpr const char* kSimDevicesVariable = "VERBFAULT_SIM_DEVICES";

}  // namespace verbfault

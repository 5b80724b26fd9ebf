// Which profile each simulated device has: VERBFAULT_SIM_PROFILE.
//
//   unset or empty          every device `ib`
//   roce                    every device the built-in profile `roce`
//   /path/my_nic.yaml       every device the profile in that file
//   vfsim0=ib,vfsim1=roce   per device (devices not named: `ib`)
//
// A value with a '/' or ending in ".yaml" is a file, anything else the
// name of a built-in profile (builtin_profiles.h).
#pragma once

#include "device_profile.h"

#include <string>
#include <vector>

namespace verbfault::sim {

inline constexpr const char* kDefaultProfile = "ib";

struct ProfileSelection {
  std::vector<DeviceProfile> profiles;  // one per device, in index order
  // One line naming VERBFAULT_SIM_PROFILE and what was expected; empty when
  // every device has its profile. On error `profiles` is empty: the process
  // gets no simulated device rather than one that is silently different.
  std::string error;
};

// The profiles of `devices` devices (vfsim0..) for the variable's value
// (nullptr: unset).
ProfileSelection select_profiles(const char* value, int devices);

// One profile by built-in name or file path (the values above).
struct ProfileRead;
ProfileRead load_profile(const std::string& name_or_path);

}  // namespace verbfault::sim

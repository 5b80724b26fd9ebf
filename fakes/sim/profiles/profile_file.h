// A device profile's YAML text (docs/device-profiles.md) read into a
// DeviceProfile. Strict: an unknown key, a value of the wrong type or out of
// range, or a missing required key is an error, never ignored, so that a
// typo does not silently leave the default in place.
#pragma once

#include "device_profile.h"

#include <optional>
#include <string>
#include <string_view>

namespace verbfault::sim {

struct ProfileRead {
  std::optional<DeviceProfile> profile;
  // One line without a trailing newline: the source, the line, the key and
  // what was expected ("cx6.yaml line 12: device.max_qp: 'many' is not an
  // integer; expected 1..2147483647"). Empty when `profile` is set.
  std::string error;
};

// `text` is the YAML; `source` names it in errors and becomes the
// profile's name when the text has no `name`.
ProfileRead read_profile(std::string_view text, const std::string& source);

// The same for a file (an unreadable file is an error naming it).
ProfileRead read_profile_file(const std::string& path);

}  // namespace verbfault::sim

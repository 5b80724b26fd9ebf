// The built-in device profiles: fakes/sim/profiles/*.yaml, compiled into the
// library at build time (profiles/embed_profiles.cmake), so that an
// installed libverbfault.so needs no data file beside it.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace verbfault::sim {

// Each built-in profile's name (its file's name without .yaml) and YAML
// text, in name order.
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_profiles();

// The text of the built-in profile `name`, if there is one.
std::optional<std::string_view> builtin_profile_text(std::string_view name);

}  // namespace verbfault::sim

#include "profile_selection.h"

#include "builtin_profiles.h"
#include "profile_file.h"

#include <optional>

namespace verbfault::sim {

namespace {

bool is_path(const std::string& value) {
  return value.find('/') != std::string::npos ||
         (value.size() > 5 && value.compare(value.size() - 5, 5, ".yaml") == 0);
}

std::string builtin_names() {
  std::string names;
  for (const auto& [name, text] : builtin_profiles())
    names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

}  // namespace

ProfileRead load_profile(const std::string& name_or_path) {
  if (is_path(name_or_path)) return read_profile_file(name_or_path);
  if (std::optional<std::string_view> text = builtin_profile_text(name_or_path))
    return read_profile(*text, "built-in profile '" + name_or_path + "'");
  return {std::nullopt, "unknown profile '" + name_or_path + "'; expected a built-in profile (" +
                            builtin_names() + ") or the path of a YAML file"};
}

ProfileSelection select_profiles(const char* value, int devices) {
  const std::string text = value == nullptr ? "" : value;
  std::vector<std::string> chosen(static_cast<size_t>(devices), kDefaultProfile);
  auto failure = [&](const std::string& why) {
    return ProfileSelection{{}, "verbfault: VERBFAULT_SIM_PROFILE='" + text + "': " + why};
  };
  if (text.find('=') == std::string::npos) {
    if (!text.empty()) chosen.assign(chosen.size(), text);
  } else {
    // vfsimN=profile, comma-separated; each device at most once.
    std::vector<bool> named(chosen.size(), false);
    size_t start = 0;
    while (start <= text.size()) {
      const size_t comma = std::min(text.find(',', start), text.size());
      const std::string item = text.substr(start, comma - start);
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
        return failure("'" + item + "' is not of the form vfsimN=profile");
      const std::string device = item.substr(0, eq);
      int index = -1;
      for (int i = 0; i < devices; ++i)
        if (device == "vfsim" + std::to_string(i)) index = i;
      if (index < 0)
        return failure("no simulated device '" + device + "'; expected " +
                       (devices == 0 ? std::string("none (VERBFAULT_SIM_DEVICES=0)")
                                     : "vfsim0..vfsim" + std::to_string(devices - 1)));
      if (named[static_cast<size_t>(index)]) return failure(device + " is named twice");
      named[static_cast<size_t>(index)] = true;
      chosen[static_cast<size_t>(index)] = item.substr(eq + 1);
      start = comma + 1;
    }
  }
  // A value that names no device still has to be right (nothing is
  // silently ignored): with VERBFAULT_SIM_DEVICES=0 it is read all the same.
  if (chosen.empty() && !text.empty() && text.find('=') == std::string::npos) {
    ProfileRead read = load_profile(text);
    if (!read.profile) return failure(read.error);
  }
  ProfileSelection selection;
  for (const std::string& name : chosen) {
    ProfileRead read = load_profile(name);
    if (!read.profile) return failure(read.error);
    selection.profiles.push_back(std::move(*read.profile));
  }
  return selection;
}

}  // namespace verbfault::sim

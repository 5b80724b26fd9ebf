#include "race_windows.h"

#include "window.h"

#include <cstdio>

namespace verbfault::cli {

std::vector<std::string> race_window_names() {
  std::vector<std::string> names;
  for (const Window window : kWindows) names.emplace_back(window_name(window));
  return names;
}

void print_race_windows(std::string_view command, std::string_view unit,
                        const std::map<std::string, std::size_t>& reached) {
  std::string counts, never;
  for (const std::string& name : race_window_names()) {
    const auto found = reached.find(name);
    if (found == reached.end())
      never += (never.empty() ? "" : ", ") + name;
    else
      counts += (counts.empty() ? "" : ", ") + name + " " + std::to_string(found->second);
  }
  const std::string what(command), runs(unit);
  std::fprintf(stderr, "verbfault: %s: race windows reached (%ss): %s\n", what.c_str(),
               runs.c_str(), counts.empty() ? "none" : counts.c_str());
  if (!never.empty())
    std::fprintf(stderr, "verbfault: %s: race windows no %s reached: %s\n", what.c_str(),
                 runs.c_str(), never.c_str());
}

}  // namespace verbfault::cli

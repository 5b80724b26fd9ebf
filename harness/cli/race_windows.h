// The race windows (record/window.h) a batch of runs reached, as sweep and
// conform print them: how many runs reached each, and the windows none
// did, so that a clean batch says whether it exercised the races at all.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::cli {

// Every window's name, in record/window.h's order.
std::vector<std::string> race_window_names();

// `reached`: the runs that reached each window, by name. Prints
//   verbfault: COMMAND: race windows reached (UNITs): NAME N, ...
//   verbfault: COMMAND: race windows no UNIT reached: NAME, ...
// (the second line only when some window was not reached).
void print_race_windows(std::string_view command, std::string_view unit,
                        const std::map<std::string, std::size_t>& reached);

}  // namespace verbfault::cli

// How fuzz_cli_options turns an input into verbfault's argv: split at each
// NUL or newline, "verbfault" first. Shared with the command line's unit
// tests (harness/tests/cli), which replay the corpus through one parser.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::fuzz {

// Whether an argument may name a special file (/dev/zero, /proc/self/fd/0):
// `minimize --replay FILE` reads the file it names, and reading those is not
// argument parsing (it may never end).
inline bool names_special_file(std::string_view argument) {
  for (std::string_view root : {"/dev", "/proc", "/sys"})
    if (argument.find(root) != std::string_view::npos) return true;
  for (std::string_view root : {"dev", "proc", "sys"})
    if (argument.starts_with(root)) return true;
  return false;
}

// The arguments, argv[0] included; none when one names a special file.
inline std::optional<std::vector<std::string>> cli_arguments(std::string_view input) {
  std::vector<std::string> arguments{"verbfault"};
  std::size_t begin = 0;
  while (begin <= input.size()) {
    std::size_t end = input.find_first_of(std::string_view("\0\n", 2), begin);
    if (end == std::string_view::npos) end = input.size();
    arguments.emplace_back(input.substr(begin, end - begin));
    if (names_special_file(arguments.back())) return std::nullopt;
    begin = end + 1;
  }
  return arguments;
}

}  // namespace verbfault::fuzz

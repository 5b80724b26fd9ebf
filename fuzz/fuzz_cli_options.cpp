// verbfault's command line (harness/cli/command_line.cpp: CLI11 options,
// seeds, seed ranges, shards, --start-wait, the commands after "--") on
// arbitrary argv, without running anything. The input is split into
// arguments at each NUL or newline; argv[0] is "verbfault". Contract: a
// command line, or an exit status (0 after --help, 125 for a usage error
// said on stderr); never an exception or a crash.
#include "command_line.h"
#include "fuzz_check.h"
#include "process.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace {

// Whether an argument may name a special file (/dev/zero, /proc/self/fd/0):
// `minimize --replay FILE` reads the file it names, and reading those is not
// argument parsing (it may never end).
bool names_special_file(std::string_view argument) {
  for (std::string_view root : {"/dev", "/proc", "/sys"})
    if (argument.find(root) != std::string_view::npos) return true;
  for (std::string_view root : {"dev", "proc", "sys"})
    if (argument.starts_with(root)) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace verbfault;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> arguments{"verbfault"};
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find_first_of(std::string_view("\0\n", 2), begin);
    if (end == std::string_view::npos) end = text.size();
    arguments.emplace_back(text.substr(begin, end - begin));
    if (names_special_file(arguments.back())) return 0;
    begin = end + 1;
  }
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  argv.push_back(nullptr);

  const std::variant<cli::CommandLine, int> parsed =
      cli::parse_command_line(static_cast<int>(arguments.size()), argv.data());
  if (const int* status = std::get_if<int>(&parsed)) {
    fuzz::require(*status == 0 || *status == cli::kExitUsage, "exit status",
                  std::to_string(*status));
    return 0;
  }
  // The subcommands that run a program have one (main.cpp relies on it).
  const cli::CommandLine& line = std::get<cli::CommandLine>(parsed);
  switch (line.subcommand) {
    case cli::Subcommand::run:
    case cli::Subcommand::sweep:
    case cli::Subcommand::minimize:
    case cli::Subcommand::conform:
      fuzz::require(!line.run.command.empty(), "a program to run after --");
      break;
    default:
      break;
  }
  return 0;
}

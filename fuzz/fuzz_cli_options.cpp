// verbfault's command line (harness/cli/command_line.cpp: CLI11 options,
// seeds, seed ranges, shards, --start-wait, the commands after "--") on
// arbitrary argv, without running anything. The input is split into
// arguments at each NUL or newline; argv[0] is "verbfault". Contract: a
// command line and nothing printed, or --help printed and 0, or exit status
// 125 with exactly one line "verbfault: ..." on stderr; never an exception
// or a crash. One parser parses every input (building it is most of a
// parse's cost); one input in 256 (by its hash) is parsed by a new parser
// too, and must give the same answer and the same words: nothing an input
// wrote may leak into the next one's.
#include "cli_arguments.h"
#include "command_line.h"
#include "fuzz_check.h"
#include "process.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace {

// An input as a C string literal would write it, every byte not printable
// ASCII and the backslash escaped: a message of one line from which the
// exact bytes can be written back (PlanError's escaping keeps UTF-8 and
// backslashes as they are: readable, not reversible).
std::string escaped(std::string_view input) {
  std::string text;
  for (const char c : input) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\') {
      text += "\\\\";
    } else if (byte >= 0x20 && byte < 0x7f) {
      text += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      text += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
    }
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace verbfault;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::optional<std::vector<std::string>> arguments = fuzz::cli_arguments(input);
  if (!arguments) return 0;
  std::vector<const char*> argv;
  for (const std::string& argument : *arguments) argv.push_back(argument.c_str());
  argv.push_back(nullptr);

  static cli::CommandLineParser parser;
  static std::ostringstream out, err;  // kept: their buffers stay allocated
  // The input the parser parsed before this one: what a difference from a
  // new parser would come from (replay the two in order to reproduce it).
  static std::string previous;
  out.str({});
  err.str({});
  const int argc = static_cast<int>(arguments->size());
  const std::variant<cli::CommandLine, int> parsed = parser.parse(argc, argv.data(), out, err);
  // Chosen by the input, not by a count, so that a pair replays the same.
  if (std::hash<std::string_view>{}(input) % 256 == 0) {
    std::ostringstream fresh_out, fresh_err;
    cli::CommandLineParser fresh;
    const bool same = fresh.parse(argc, argv.data(), fresh_out, fresh_err) == parsed &&
                      fresh_out.str() == out.str() && fresh_err.str() == err.str();
    fuzz::require(same, "the same command line and words from a new parser as the reused one",
                  "after the input \"" + escaped(previous) + "\"");
  }
  previous.assign(input);
  const std::string said = err.str();
  if (const int* status = std::get_if<int>(&parsed)) {
    if (*status == 0) {
      fuzz::require(!out.str().empty() && said.empty(), "--help printed, nothing on stderr");
      return 0;
    }
    fuzz::require(*status == exit_status::kUsage, "exit status", std::to_string(*status));
    fuzz::require(out.str().empty(), "a usage error prints nothing on stdout", out.str());
    fuzz::require(said.starts_with("verbfault: ") && said.find('\n') == said.size() - 1,
                  "a usage error is one line \"verbfault: ...\"", said);
    return 0;
  }
  fuzz::require(out.str().empty() && said.empty(), "a command line prints nothing",
                out.str() + said);
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

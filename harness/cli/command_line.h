// verbfault's own arguments (those before "--"), parsed into the options
// of the one subcommand they name, without running anything: main.cpp
// runs it, and fuzz/fuzz_cli_options.cpp feeds it arbitrary argv.
#pragma once

#include "conform.h"
#include "minimize.h"
#include "provider_report.h"
#include "report_command.h"
#include "replay_command.h"
#include "run.h"
#include "sweep.h"
#include "trace_view.h"

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace verbfault::cli {

enum class Subcommand {
  run,
  sweep,
  minimize,
  replay,
  conform,
  swarm,
  plan,
  trace,
  provider_report,
  report_merge
};

// The options of every subcommand; only those of `subcommand` were parsed.
// The program after "--" is in run.command (and in the sweep, minimize and
// conform options).
struct CommandLine {
  Subcommand subcommand = Subcommand::run;
  RunOptions run;
  SweepOptions sweep;
  MinimizeOptions minimize;
  ReplayOptions replay;
  ConformOptions conform;
  std::optional<std::string> palette_file;  // swarm
  std::optional<std::uint64_t> swarm_seed;  // swarm --seed
  std::string plan_file;                    // plan
  TraceViewOptions trace_view;
  ProviderReportOptions provider_report;
  ReportMergeOptions report_merge;

  bool operator==(const CommandLine&) const = default;
};

// verbfault's options, built once and parsed any number of times: each
// parse starts from the defaults, whatever the one before it gave (the
// fuzzer parses millions of command lines; building CLI11's ~70 options is
// nine tenths of a parse's cost). Not thread-safe: one owner parses.
class CommandLineParser {
 public:
  CommandLineParser();
  ~CommandLineParser();
  CommandLineParser(const CommandLineParser&) = delete;
  CommandLineParser& operator=(const CommandLineParser&) = delete;

  // Parses argv (argv[0] the program's name). Returns the command line, or
  // the exit status when the arguments end the program here: 0 after
  // --help (printed on `out`), exit_status::kUsage after a usage, seed, plan or
  // replay-file error (one line on `err`, "verbfault: ..."). Writes nothing
  // when it returns a command line. Reads only the replay file of
  // `minimize --replay`.
  std::variant<CommandLine, int> parse(int argc, const char* const* argv,
                                       std::ostream& out = std::cout,
                                       std::ostream& err = std::cerr);

  // What CLI11 holds of the parses so far (each option it saw, in order):
  // at most the last parse's, however many were made.
  std::size_t remembered_options() const;

  // The reference of every subcommand in Markdown, from the parser itself
  // (docs/cli.md's generated blocks, docs_reference.cpp): subcommand name
  // -> its description, usage line, table of options and footer.
  std::vector<std::pair<std::string, std::string>> reference() const;

 private:
  struct Options;  // CLI11's App and the variables its options write
  std::unique_ptr<Options> options_;
};

// One parse with a parser of its own (main.cpp): CommandLineParser::parse.
std::variant<CommandLine, int> parse_command_line(int argc, const char* const* argv);

}  // namespace verbfault::cli

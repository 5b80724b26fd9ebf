// verbfault's own arguments (those before "--"), parsed into the options
// of the one subcommand they name, without running anything: main.cpp
// runs it, and fuzz/fuzz_cli_options.cpp feeds it arbitrary argv.
#pragma once

#include "conform.h"
#include "minimize.h"
#include "provider_report.h"
#include "replay_command.h"
#include "run.h"
#include "sweep.h"
#include "trace_view.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

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
  provider_report
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
};

// Parses argv (argv[0] the program's name). Returns the command line, or
// the exit status when the arguments end the program here: 0 after --help
// (printed), kExitUsage after a usage, seed, plan or replay-file error (one
// line on stderr). Reads only the replay file of `minimize --replay`.
std::variant<CommandLine, int> parse_command_line(int argc, const char* const* argv);

}  // namespace verbfault::cli

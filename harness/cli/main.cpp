// The verbfault command line.
//
//   verbfault run [--seed N] [--plan FILE] [--fault RULE]... [--trace FILE]
//                 [--check-determinism] [--timeout S] [--peer-grace S]
//                 [--start-wait S] [--library PATH]
//                 -- CMD ARGS [::: CMD ARGS]...   (run.h, run_group.h)
//   verbfault sweep --seeds A..B [--plan FILE] [--fault RULE]... [--jobs N]
//                   [--shard I/N] [--max-failures K] [--timeout S] [--out DIR]
//                   [--report DIR] -- CMD ARGS   (sweep.h)
//   verbfault minimize --seed N (--plan FILE | --fault RULE ...) [--signature same|any]
//                      [--out STEM] -- CMD ARGS   (minimize.h)
//   verbfault swarm [--palette FILE] [--seed N]      (swarm.h)
//   verbfault conform [--battery default|FILE] [--seeds N] [--jobs N] [--report DIR]
//                     [--class NAME]... [--shard I/N] -- CMD ARGS   (conform.h)
//   verbfault report merge [--out DIR] DIR...   join shards' reports (report_command.h)
//   verbfault replay FILE [--out DIR] [--timeout S]   (replay_command.h)
//   verbfault plan FILE         check a plan file and print it canonically
//   verbfault trace FILE [--object NAME] [--kind call|fault|check|event]
//                               print a trace for people, one line a record
//   verbfault provider-report [--device NAME] [--report DIR] [--baseline FILE]
//                             [--compare A.json B.json ...]   (provider_report.h)
//
// Exit status: the program's own; 121 when it exited 0 but the runtime
// checks reported findings; 122 when the checks ended a program that could
// never make progress (liveness); 124 when --check-determinism finds the
// two runs differ; 125 for a usage or plan error; 126 / 127 when the
// command cannot be executed / is not found (the convention of env(1)).
#include "command_line.h"
#include "conform.h"
#include "minimize.h"
#include "process.h"
#include "provider_report.h"
#include "replay_command.h"
#include "replay_file.h"
#include "run.h"
#include "sweep.h"
#include "swarm.h"
#include "trace_view.h"
#include "verbfault/plan.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string_view>
#include <variant>

namespace {

namespace fs = std::filesystem;

// libverbfault.so next to this program in the build tree, or in the
// installed library directory.
std::string default_library() {
  if (const char* library = std::getenv("VERBFAULT_LIBRARY")) return library;
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) return "libverbfault.so";
  for (const fs::path& candidate :
       {self.parent_path() / ".." / "libverbfault.so",
        self.parent_path() / VERBFAULT_INSTALL_LIBDIR_RELATIVE / "libverbfault.so"})
    if (fs::exists(candidate)) return fs::canonical(candidate).string();
  return "libverbfault.so";
}

}  // namespace

int main(int argc, char** argv) {
  std::variant<verbfault::cli::CommandLine, int> parsed =
      verbfault::cli::parse_command_line(argc, argv);
  if (const int* status = std::get_if<int>(&parsed)) return *status;
  verbfault::cli::CommandLine& line = std::get<verbfault::cli::CommandLine>(parsed);
  using verbfault::cli::Subcommand;
  verbfault::cli::RunOptions& options = line.run;
  verbfault::cli::SweepOptions& sweep_options = line.sweep;
  verbfault::cli::MinimizeOptions& minimize_options = line.minimize;
  verbfault::cli::ConformOptions& conform_options = line.conform;
  verbfault::cli::ReplayOptions& replay_options = line.replay;
  verbfault::cli::ProviderReportOptions& provider_options = line.provider_report;
  const std::optional<std::string>& palette_file = line.palette_file;
  const std::string& plan_file = line.plan_file;

  if (line.subcommand == Subcommand::sweep) {
    if (sweep_options.library.empty()) sweep_options.library = default_library();
    return verbfault::cli::sweep(sweep_options);
  }
  if (line.subcommand == Subcommand::conform) {
    if (conform_options.library.empty()) conform_options.library = default_library();
    return verbfault::cli::conform(conform_options);
  }
  if (line.subcommand == Subcommand::minimize) {
    if (minimize_options.library.empty()) minimize_options.library = default_library();
    return verbfault::cli::minimize(minimize_options);
  }
  if (line.subcommand == Subcommand::swarm) {
    try {
      const verbfault::cli::Palette palette =
          palette_file ? verbfault::cli::Palette::from_file(*palette_file)
                       : verbfault::cli::Palette::standard();
      if (!line.swarm_seed)
        std::fputs(palette.text().c_str(), stdout);
      else
        std::fputs(verbfault::to_yaml(palette.draw(*line.swarm_seed)).c_str(), stdout);
      return 0;
    } catch (const verbfault::PlanError& error) {
      std::fprintf(stderr, "verbfault: %s\n", error.what());
      return verbfault::exit_status::kUsage;
    }
  }
  if (line.subcommand == Subcommand::replay) {
    if (replay_options.library.empty()) replay_options.library = default_library();
    return verbfault::cli::replay(replay_options);
  }
  if (line.subcommand == Subcommand::plan) {
    try {
      std::fputs(verbfault::to_yaml(verbfault::parse_plan_file(plan_file)).c_str(), stdout);
      return 0;
    } catch (const verbfault::PlanError& error) {
      std::fprintf(stderr, "verbfault: %s\n", error.what());
      return verbfault::exit_status::kUsage;
    }
  }
  if (line.subcommand == Subcommand::trace) return verbfault::cli::print_trace(line.trace_view);
  if (line.subcommand == Subcommand::report_merge)
    return verbfault::cli::report_merge(line.report_merge);
  if (line.subcommand == Subcommand::provider_report) {
    if (provider_options.library.empty()) provider_options.library = default_library();
    return verbfault::cli::provider_report(provider_options);
  }
  if (options.library.empty()) {
    options.library = default_library();
    if (std::getenv("VERBFAULT_LIBRARY") != nullptr) options.library_source = "VERBFAULT_LIBRARY";
  }
  return verbfault::cli::run(options);
}

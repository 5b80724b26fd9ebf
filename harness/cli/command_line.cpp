// verbfault's own arguments, parsed into the options of its one command
// (main.cpp runs it). Kept apart from main so that the parsing can be
// exercised without running anything (fuzz/fuzz_cli_options.cpp).
#include "command_line.h"

#include "command_list.h"
#include "option_checks.h"
#include "process.h"
#include "process_group.h"
#include "replay_file.h"
#include "sweep.h"
#include "verbfault/plan.h"

#include <CLI/CLI.hpp>

#include <array>
#include <cctype>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace verbfault::cli {

namespace {

// A CLI11 App that can be parsed again without growing: CLI11 2.1's
// App::clear() (which parse() calls) keeps parse_order_, to which every
// parse appends each option it saw, so a parser reused for a million
// parses held ~150 MB more (fuzz_cli_options, measured). The subcommands
// are ReusableApps too: an App can only reach its own parse_order_.
class ReusableApp : public CLI::App {
 public:
  explicit ReusableApp(std::string description) : CLI::App(std::move(description)) {}

  // As App::add_subcommand(name, description), which builds a plain App:
  // the same inheriting constructor (help flag, defaults), then adopted.
  ReusableApp* add_reusable_subcommand(std::string name, std::string description) {
    std::shared_ptr<ReusableApp> sub(
        new ReusableApp(std::move(description), std::move(name), this));
    ReusableApp* const raw = sub.get();
    add_subcommand(std::move(sub));
    return raw;
  }

  void forget_parse_order() { parse_order_.clear(); }

 private:
  ReusableApp(std::string description, std::string name, CLI::App* parent)
      : CLI::App(std::move(description), std::move(name), parent) {}
};

}  // namespace

// CLI11's App and the variables its options write. The App holds
// references into `written`, so `written` is assigned its defaults before
// each parse, never replaced; an Options never moves (CommandLineParser
// holds it by pointer).
struct CommandLineParser::Options {
  struct Written {
    CommandLine line;
    std::string seed_text;
    std::string start_wait_text;
    std::string seeds_text, shard_text;  // --shard of sweep or conform (one is parsed)
    std::string minimize_seed_text, signature_text = "same";
    std::optional<std::string> minimize_replay;
    std::string swarm_seed_text;
  };
  Written written;
  ReusableApp app{"verbfault: deterministic fault injection for RDMA verbs programs"};
  ReusableApp* run = nullptr;
  ReusableApp* sweep = nullptr;
  ReusableApp* minimize = nullptr;
  ReusableApp* replay = nullptr;
  ReusableApp* conform = nullptr;
  ReusableApp* swarm = nullptr;
  ReusableApp* plan = nullptr;
  ReusableApp* trace = nullptr;
  ReusableApp* provider = nullptr;
  ReusableApp* report = nullptr;
  ReusableApp* report_merge = nullptr;

  Options();
  std::array<ReusableApp*, 12> all() {
    return {&app,  run,   sweep, minimize, replay,   conform,
            swarm, plan,  trace, provider, report, report_merge};
  }
};

CommandLineParser::Options::Options() {
  CommandLine& line = written.line;
  app.require_subcommand(1);

  RunOptions& options = line.run;
  run = app.add_reusable_subcommand("run", "run a program under the harness");
  run->add_option("--seed", written.seed_text,
                  "64-bit seed (decimal or 0x hex); drawn when omitted")->type_name("N");
  run->add_option("--plan", options.plan_file, "YAML plan file")->type_name("FILE")->check(existing_file());
  run->add_option("--fault", options.faults, "a rule in the one-line form (repeatable)")->type_name("RULE");
  run->add_option("--trace", options.trace, "write the JSON Lines trace here")->type_name("FILE");
  run->add_option("--findings", options.findings,
                  "keep the runtime checks' findings here, as JSON Lines (check, object, "
                  "message, trace_position, replay, fails_run); with --check-determinism, the "
                  "second run's")->type_name("FILE");
  run->add_flag("--check-determinism", options.check_determinism,
                "run twice and compare the traces");
  run->add_option("--threads", options.threads,
                  "how the program's threads are scheduled: pct (the default: PCT from the "
                  "seed), pct:depth=D:steps=K, random, each with :preempt=P and :escape=MS, or free (as the "
                  "kernel schedules them; not deterministic)")->type_name("MODE");
  run->add_option("--hang-after", options.hang_after,
                  "seconds of wall clock without a verbs call making progress, while every "
                  "thread waits or spins in a call the harness sees, before the run is ended "
                  "as hung (exit status 122; default 10, 0: never); on any provider")->type_name("S");
  run->add_option("--timeout", options.timeout_seconds,
                  "seconds of wall clock for the whole run before every process still running "
                  "is ended (default: no limit)")->type_name("S")
      ->check(verbfault::cli::seconds(false));
  run->add_option("--peer-grace", options.peer_grace_seconds,
                  "with several commands: seconds the others may still run once one failed "
                  "(nonzero exit or signal), or once the last one ended (a server that serves "
                  "until killed), before they are ended (default 5)")->type_name("S")
      ->check(verbfault::cli::seconds(true));
  run->add_option("--start-wait", written.start_wait_text,
                  "with several commands: seconds each may take to listen on a socket (or end) "
                  "before the next is started anyway (default 10; 0: start all at once)")->type_name("S");
  run->add_option("--library", options.library, "libverbfault.so to preload")->type_name("FILE");
  run->footer(
      "Everything after -- is the program and its arguments, passed on untouched. Several "
      "commands separated by a lone ::: run together as one run, each with its own "
      "VERBFAULT_PROC and trace, started in order: each once the one before listens (the "
      "server first, then its client).");

  SweepOptions& sweep_options = line.sweep;
  sweep = app.add_reusable_subcommand("sweep",
                                      "run a program once per seed, in parallel, and "
                                      "group the failures by signature");
  sweep->add_option("--seeds", written.seeds_text, "the seeds, A..B")->type_name("A..B")->required();
  sweep
      ->add_option("--plan", sweep_options.plan_file,
                   "YAML plan file (with --swarm: the palette to draw from)")->type_name("FILE")
      ->check(verbfault::cli::existing_file());
  sweep->add_flag("--swarm", sweep_options.swarm,
                  "each seed also draws which fault kinds are enabled and at what rates, from "
                  "the default palette or the --plan palette");
  sweep->add_option("--fault", sweep_options.faults, "a rule in the one-line form (repeatable)")->type_name("RULE");
  sweep->add_option("--jobs", sweep_options.jobs, "runs at once (default: the number of cores)")->type_name("N")
      ->check(verbfault::cli::whole_number(1, 1024));
  sweep->add_flag("--fork-server", sweep_options.fork_server,
                  "each job runs the program to its first verbs call once and forks it there "
                  "for every seed, instead of starting it from exec (experimental: "
                  "docs/using.md, \"The fork server\")");
  sweep->add_option("--shard", written.shard_text,
                    "I/N: only every N-th seed from the I-th (the shards of a range partition it); "
                    "auto: from CI_NODE_INDEX/CI_NODE_TOTAL; auto/N: from JOB_COMPLETION_INDEX")
      ->type_name("I/N");
  sweep
      ->add_option("--max-failures", sweep_options.max_failures,
                   "stop starting runs after K failures (default: no limit)")->type_name("K")
      ->check(verbfault::cli::whole_number(1, UINT32_MAX));
  sweep
      ->add_option("--timeout", sweep_options.timeout_seconds,
                   "seconds of wall clock per run before it is killed (default 300)")->type_name("S")
      ->check(verbfault::cli::seconds(false));
  sweep->add_option("--out", sweep_options.out,
                    "keep each run's output and trace here (DIR/seed-S.log, .jsonl)")->type_name("DIR");
  sweep->add_option("--report", sweep_options.report_dir,
                    "also write the seeds' report: DIR/report.{html,json,xml,md}, the failed "
                    "runs' files in DIR/runs/")->type_name("DIR");
  sweep->add_option("--threads", sweep_options.threads, "as for run")->type_name("MODE");
  sweep
      ->add_option("--pass-status", sweep_options.pass_statuses,
                   "exit statuses that pass when no check reported, e.g. 0,1 (default 0)")->type_name("LIST")
      ->delimiter(',')
      ->check(verbfault::cli::whole_number(0, 255));
  sweep->add_option("--library", sweep_options.library, "libverbfault.so to preload")->type_name("FILE");
  sweep->footer(
      "Everything after -- is the program and its arguments. Exit status 0 when no "
      "seed failed, 1 when some did.");

  MinimizeOptions& minimize_options = line.minimize;
  minimize = app.add_reusable_subcommand(
      "minimize", "shrink a failing run's plan to the smallest that still fails the same way");
  minimize->add_option("--seed", written.minimize_seed_text, "the failing seed")->type_name("N");
  minimize
      ->add_option("--replay", written.minimize_replay,
                   "take the seed, plan, knobs and command from a replay file (verbfault sweep)")->type_name("FILE")
      ->check(verbfault::cli::existing_file())
      ->excludes("--seed");
  minimize->add_option("--plan", minimize_options.plan_file, "YAML plan file")->type_name("FILE")
      ->check(verbfault::cli::existing_file());
  minimize->add_option("--fault", minimize_options.faults,
                       "a rule in the one-line form (repeatable)")->type_name("RULE");
  minimize->add_option("--threads", minimize_options.threads, "as for run")->type_name("MODE");
  minimize
      ->add_option("--pass-status", minimize_options.pass_statuses,
                   "exit statuses that pass when no check reported (default 0)")->type_name("LIST")
      ->delimiter(',')
      ->check(verbfault::cli::whole_number(0, 255));
  minimize
      ->add_option("--signature", written.signature_text,
                   "same (the default): keep the exit status, checks and first fault; any: "
                   "keep failing")->type_name("same|any")
      ->check(CLI::IsMember({"same", "any"}));
  minimize->add_option("--out", minimize_options.out,
                       "write STEM.plan and STEM.replay (a regression scenario)")->type_name("DIR");
  minimize
      ->add_option("--timeout", minimize_options.timeout_seconds,
                   "seconds of wall clock per run before it is killed (default 300)")->type_name("S")
      ->check(verbfault::cli::seconds(false));
  minimize->add_option("--library", minimize_options.library, "libverbfault.so to preload")->type_name("FILE");

  ReplayOptions& replay_options = line.replay;
  replay = app.add_reusable_subcommand(
      "replay", "run a replay file again and say whether its outcome and trace reproduce");
  replay->add_option("file", replay_options.file, "a replay file (verbfault sweep, minimize)")->type_name("FILE")
      ->required();
  replay->add_option("--out", replay_options.out, "keep the run's output and trace here")->type_name("DIR");
  replay
      ->add_option("--timeout", replay_options.timeout_seconds,
                   "seconds of wall clock before the run is killed (default 300)")->type_name("S")
      ->check(verbfault::cli::seconds(false));
  replay->add_option("--library", replay_options.library, "libverbfault.so to preload")->type_name("FILE");

  ConformOptions& conform_options = line.conform;
  conform = app.add_reusable_subcommand(
      "conform", "run a program under a battery of fault plans and write its conformance report");
  conform->add_option("--battery", conform_options.battery,
                      "default (built in), or a battery file (reports/batteries/)")->type_name("NAME|FILE");
  conform->add_option("--seeds", conform_options.seeds, "seeds per fault class: 1..N")->type_name("N")
      ->check(verbfault::cli::whole_number(1, 10000));
  conform->add_option("--jobs", conform_options.jobs, "runs at once (default: the number of cores)")->type_name("N")
      ->check(verbfault::cli::whole_number(1, 1024));
  conform->add_flag("--fork-server", conform_options.fork_server,
                    "each job runs the program to its first verbs call once and forks it there "
                    "for every run, instead of starting it from exec (experimental: "
                    "docs/using.md, \"The fork server\")");
  conform->add_option("--report", conform_options.report_dir,
                      "where the report goes: DIR/report.{html,json,xml,md}, DIR/runs/ "
                      "(default verbfault-report)")->type_name("DIR");
  conform
      ->add_option("--timeout", conform_options.timeout_seconds,
                   "seconds of wall clock per run before it is killed (default 120)")->type_name("S")
      ->check(verbfault::cli::seconds(false));
  conform->add_option("--class", conform_options.classes,
                      "only this fault class of the battery (repeatable)")->type_name("NAME");
  conform->add_flag("--list-classes", conform_options.list_classes,
                    "print the battery's fault classes, one a line, and run nothing");
  conform->add_option("--shard", written.shard_text,
                      "I/N: only every N-th run (classes x seeds) from the I-th; auto, auto/N "
                      "as for sweep")->type_name("I/N");
  conform->add_option("--threads", conform_options.threads, "as for run")->type_name("MODE");
  conform->add_option("--library", conform_options.library, "libverbfault.so to preload")->type_name("FILE");
  conform->footer(
      "Everything after -- is the program and its arguments. Exit status 0 when no run "
      "fails to conform (a run whose fault never fired is not exercised, not failed), 1 "
      "when some do not conform.");

  std::optional<std::string>& palette_file = line.palette_file;
  swarm = app.add_reusable_subcommand(
      "swarm", "print the swarm palette, or with --seed the plan that seed draws from it");
  swarm->add_option("--palette", palette_file, "palette file (default: the default palette)")->type_name("FILE")
      ->check(verbfault::cli::existing_file());
  swarm->add_option("--seed", written.swarm_seed_text, "print the plan this seed draws")->type_name("N");

  std::string& plan_file = line.plan_file;
  plan = app.add_reusable_subcommand("plan", "check a plan file and print it canonically");
  plan->add_option("file", plan_file, "YAML plan file")->type_name("FILE")->required();

  TraceViewOptions& view = line.trace_view;
  trace = app.add_reusable_subcommand("trace", "print a trace for people, one line a record");
  trace->add_option("file", view.file, "JSON Lines trace (verbfault run --trace)")->type_name("FILE")->required();
  trace->add_option("--object", view.object, "only the records of this object, e.g. qp#1")->type_name("NAME");
  trace->add_option("--kind", view.kind, "only call, fault, check or event records")->type_name("KIND");

  ProviderReportOptions& provider_options = line.provider_report;
  provider = app.add_reusable_subcommand(
      "provider-report",
      "run a battery of verbs semantics against a device and report where it deviates from "
      "the man pages and IBTA");
  provider->add_option("--device", provider_options.device, "the device (default vfsim0)")->type_name("NAME");
  provider->add_option("--report", provider_options.report_dir,
                       "write DIR/provider-NAME.json and .md here (default out)")->type_name("DIR");
  provider
      ->add_option("--baseline", provider_options.baseline,
                   "a committed report: list every check whose verdict or value changed (exit 1)")->type_name("FILE")
      ->check(verbfault::cli::existing_file());
  provider
      ->add_option("--compare", provider_options.compare,
                   "no probe run: these reports side by side, in Markdown on stdout")->type_name("FILE")
      ->check(verbfault::cli::existing_file())
      ->excludes("--baseline");
  provider->add_option("--library", provider_options.library,
                       "libverbfault.so to preload for a simulated device")->type_name("FILE");
  provider->add_option("--probe", provider_options.probe, "verbfault-provider-probe to run")->type_name("FILE");

  ReportMergeOptions& merge_options = line.report_merge;
  report = app.add_reusable_subcommand("report", "work with reports");
  report->require_subcommand(1);
  report_merge = report->add_reusable_subcommand(
      "merge",
      "join the reports of a run's shards (sweep --report or conform, --shard I/N) into the "
      "report of the whole run");
  report_merge
      ->add_option("reports", merge_options.parts,
                   "the shards' report directories (or their report.json files)")
      ->type_name("DIR...")
      ->required();
  report_merge->add_option("--out", merge_options.out,
                           "where the merged report goes: DIR/report.{html,json,xml,md} "
                           "(default verbfault-report)")->type_name("DIR");
  report_merge->footer(
      "Exit status 0 when every run of the merged report conforms, 1 when some do not, 125 when "
      "the reports are not the shards of one run (another command, battery, build or seeds; a "
      "shard missing or given twice).");
}

namespace {

// A Markdown table cell: pipes escaped, one line.
std::string cell(std::string text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '|') escaped += '\\';
    escaped += c == '\n' ? ' ' : c;
  }
  return escaped;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> CommandLineParser::reference() const {
  std::vector<std::pair<std::string, std::string>> sections;
  // A subcommand with subcommands of its own (report merge) is shown by them.
  std::vector<std::pair<std::string, const CLI::App*>> commands;
  for (const CLI::App* sub : options_->app.get_subcommands({})) {
    if (sub->get_subcommands({}).empty()) commands.emplace_back(sub->get_name(), sub);
    for (const CLI::App* nested : sub->get_subcommands({}))
      commands.emplace_back(sub->get_name() + " " + nested->get_name(), nested);
  }
  for (const auto& [command, sub] : commands) {
    std::string usage = "    verbfault " + command;
    std::string table = "| option | meaning |\n| --- | --- |\n";
    for (const CLI::Option* option : sub->get_options()) {
      if (option == sub->get_help_ptr()) continue;
      const bool positional = option->get_positional();
      std::string name = positional ? option->get_name(true) : option->get_name(false, true);
      // CLI11 appends its validators' descriptions (":INT in [1 - 1024]")
      // to the type name; the description says the same in words.
      std::string type = option->get_type_name();
      type = type.substr(0, type.find(':'));
      const std::string shown = positional ? type : type.empty() ? name : name + " " + type;
      if (option->get_required())
        usage += " " + shown;
      else
        usage += " [" + shown + "]";
      table += "| `" + shown + "` | " + cell(option->get_description()) +
               (option->get_required() ? " (required)" : "") + " |\n";
    }
    const std::string& footer = sub->get_footer();
    // The subcommands that run a program say so in their footer.
    if (footer.find("after --") != std::string::npos) usage += " -- CMD ARGS";
    std::string description = cell(sub->get_description());
    if (!description.empty()) description[0] = static_cast<char>(std::toupper(description[0]));
    std::string section = description + ".\n\n" + usage + "\n\n" + table;
    if (!footer.empty()) section += "\n" + footer + "\n";
    sections.emplace_back(command, std::move(section));
  }
  return sections;
}

CommandLineParser::CommandLineParser() : options_(std::make_unique<Options>()) {}
CommandLineParser::~CommandLineParser() = default;

std::variant<CommandLine, int> CommandLineParser::parse(int argc, const char* const* argv,
                                                        std::ostream& out, std::ostream& err) {
  // Back to the defaults: what the last parse wrote must not leak into this
  // one (CLI11 clears its own results when parse() starts again, all but
  // the order of the options they came in).
  Options::Written& written = options_->written;
  written = Options::Written{};
  for (ReusableApp* parser : options_->all()) parser->forget_parse_order();
  CLI::App& app = options_->app;
  CLI::App* const run = options_->run;
  CLI::App* const sweep = options_->sweep;
  CLI::App* const minimize = options_->minimize;
  CLI::App* const replay = options_->replay;
  CLI::App* const conform = options_->conform;
  CLI::App* const swarm = options_->swarm;
  CLI::App* const plan = options_->plan;
  CLI::App* const trace = options_->trace;
  CommandLine& line = written.line;
  RunOptions& options = line.run;
  SweepOptions& sweep_options = line.sweep;
  MinimizeOptions& minimize_options = line.minimize;
  ConformOptions& conform_options = line.conform;

  // The command after "--" is split off before CLI11 sees it: its options
  // (sample_rc --messages 4) belong to the program, not to verbfault.
  int own_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--") continue;
    own_argc = i;
    options.command.assign(argv + i + 1, argv + argc);
    sweep_options.command = options.command;
    minimize_options.command = options.command;
    conform_options.command = options.command;
    break;
  }
  try {
    app.parse(own_argc, argv);
    // Given empty is a bad seed, not none (VERBFAULT_SEED= is one too).
    if (run->count("--seed") > 0) options.seed = verbfault::parse_seed(written.seed_text, "--seed");
    if (run->count("--start-wait") > 0)
      options.start_wait_seconds = parse_start_wait(written.start_wait_text);
    if (*minimize && written.minimize_replay) {
      if (!options.command.empty() || !minimize_options.faults.empty() ||
          minimize_options.plan_file || minimize_options.threads)
        throw CLI::ValidationError("minimize --replay",
                                   "expected no --plan, --fault, --threads or command: the replay "
                                   "file has them");
      const ReplayFile file = read_replay_file(*written.minimize_replay);
      written.minimize_seed_text = std::to_string(file.seed);
      minimize_options.plan_file = file.plan_file;
      minimize_options.faults = file.faults;
      minimize_options.threads = file.threads;
      minimize_options.settings = file.settings;
      minimize_options.pass_statuses = file.pass_statuses;
      options.command = minimize_options.command = file.command;
    }
    if (*minimize && written.minimize_seed_text.empty() && minimize->count("--seed") == 0)
      throw CLI::ValidationError("minimize", "expected --seed N or --replay FILE");
    if ((*run || *sweep || *minimize || (*conform && !conform_options.list_classes)) &&
        options.command.empty())
      throw CLI::ValidationError(*run       ? "run"
                                 : *sweep   ? "sweep"
                                 : *conform ? "conform"
                                            : "minimize",
                                 "expected the program to run after --");
    // Several commands (`-- server ::: client`) go to each run as they
    // are: checked here once, so that a bad one is one line, not one per seed.
    if ((*run || *sweep || *minimize || *conform) && !options.command.empty()) {
      try {
        split_commands(options.command);
      } catch (const std::invalid_argument& error) {
        throw std::invalid_argument(std::string(*run       ? "run"
                                                : *sweep   ? "sweep"
                                                : *conform ? "conform"
                                                           : "minimize") +
                                    ": " + error.what());
      }
    }
    if (*minimize) {
      minimize_options.seed = verbfault::parse_seed(written.minimize_seed_text, "--seed");
      minimize_options.same_signature = written.signature_text == "same";
    }
    // Given empty is a bad seed here too, not "no seed".
    if (*swarm && swarm->count("--seed") > 0)
      line.swarm_seed = verbfault::parse_seed(written.swarm_seed_text, "--seed");
    if (*sweep) {
      parse_seed_range(written.seeds_text, sweep_options);
      if (!written.shard_text.empty())
        sweep_options.shard = parse_shard(written.shard_text, process_environment());
    }
    if (*conform) {
      if (!written.shard_text.empty())
        conform_options.shard = parse_shard(written.shard_text, process_environment());
    }
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error, out, err);
    std::string subcommand;
    for (const CLI::App* parsed : app.get_subcommands()) subcommand = parsed->get_name();
    err << one_line(error, subcommand) << std::endl;
    return exit_status::kUsage;
  } catch (const verbfault::PlanError& error) {
    err << "verbfault: " << error.what() << std::endl;
    return exit_status::kUsage;
  } catch (const ReplayFileError& error) {
    err << "verbfault: " << error.what() << std::endl;
    return exit_status::kUsage;
  } catch (const std::invalid_argument& error) {
    err << "verbfault: " << error.what() << std::endl;
    return exit_status::kUsage;
  }

  line.subcommand = *run        ? Subcommand::run
                    : *sweep    ? Subcommand::sweep
                    : *minimize ? Subcommand::minimize
                    : *replay   ? Subcommand::replay
                    : *conform  ? Subcommand::conform
                    : *swarm    ? Subcommand::swarm
                    : *plan     ? Subcommand::plan
                    : *trace    ? Subcommand::trace
                    : *options_->report_merge ? Subcommand::report_merge
                                : Subcommand::provider_report;
  return std::move(line);
}

std::size_t CommandLineParser::remembered_options() const {
  std::size_t options = 0;
  for (const ReusableApp* parser : options_->all()) options += parser->parse_order().size();
  return options;
}

std::variant<CommandLine, int> parse_command_line(int argc, const char* const* argv) {
  return CommandLineParser().parse(argc, argv);
}

}  // namespace verbfault::cli

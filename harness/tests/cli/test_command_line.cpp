// The command line's parser (harness/cli/command_line.h) is built once and
// reused (the fuzzer parses millions of command lines with one): whatever
// a parse wrote, the next one starts from the defaults and gives what a new
// parser gives, after a good command line, a usage error or --help alike.
#include "cli_arguments.h"
#include "command_line.h"
#include "process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

namespace verbfault::cli {
namespace {

// A parse's answer and what it printed on stdout and stderr.
struct Parsed {
  std::variant<CommandLine, int> answer;
  std::string out, err;
  bool operator==(const Parsed&) const = default;
};

Parsed parse_with(CommandLineParser& parser, const std::vector<std::string>& arguments) {
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  auto answer = parser.parse(static_cast<int>(arguments.size()), argv.data(), out, err);
  return {std::move(answer), out.str(), err.str()};
}

Parsed parse_fresh(const std::vector<std::string>& arguments) {
  CommandLineParser parser;
  return parse_with(parser, arguments);
}

const CommandLine& command_line(const Parsed& parsed) {
  return std::get<CommandLine>(parsed.answer);
}

TEST(CommandLineParser, OptionsOfTheLastParseDoNotCarryOver) {
  CommandLineParser parser;
  const Parsed first =
      parse_with(parser, {"verbfault", "run", "--seed", "5", "--fault", "flush qp#0", "--trace",
                          "t.jsonl", "--check-determinism", "--start-wait", "0", "--", "a"});
  ASSERT_TRUE(std::holds_alternative<CommandLine>(first.answer)) << first.err;
  EXPECT_EQ(command_line(first).run.seed, 5u);
  EXPECT_EQ(command_line(first).run.start_wait_seconds, 0.0);
  const Parsed second = parse_with(parser, {"verbfault", "run", "--", "b"});
  ASSERT_TRUE(std::holds_alternative<CommandLine>(second.answer)) << second.err;
  const RunOptions& run = command_line(second).run;
  EXPECT_FALSE(run.seed.has_value());
  EXPECT_TRUE(run.faults.empty());
  EXPECT_FALSE(run.trace.has_value());
  EXPECT_FALSE(run.check_determinism);
  EXPECT_EQ(run.start_wait_seconds, kDefaultStartWaitSeconds);
  EXPECT_EQ(run.command, std::vector<std::string>{"b"});
  EXPECT_EQ(second, parse_fresh({"verbfault", "run", "--", "b"}));
  EXPECT_EQ(second.out + second.err, "");
}

TEST(CommandLineParser, AMinimizeAfterOneWithOtherDefaultsGetsTheDefaults) {
  CommandLineParser parser;
  const Parsed any = parse_with(parser, {"verbfault", "minimize", "--seed", "3", "--signature",
                                         "any", "--pass-status", "0,1", "--", "a"});
  ASSERT_TRUE(std::holds_alternative<CommandLine>(any.answer)) << any.err;
  EXPECT_FALSE(command_line(any).minimize.same_signature);
  EXPECT_EQ(command_line(any).minimize.pass_statuses, (std::vector<int>{0, 1}));
  const Parsed same = parse_with(parser, {"verbfault", "minimize", "--seed", "3", "--", "a"});
  ASSERT_TRUE(std::holds_alternative<CommandLine>(same.answer)) << same.err;
  EXPECT_TRUE(command_line(same).minimize.same_signature);
  EXPECT_EQ(command_line(same).minimize.pass_statuses, std::vector<int>{0});
}

TEST(CommandLineParser, AParseAfterAUsageErrorOrHelpIsAsFromANewParser) {
  CommandLineParser parser;
  const Parsed error =
      parse_with(parser, {"verbfault", "sweep", "--seeds", "1..4", "--jobs", "0", "--", "a"});
  EXPECT_EQ(std::get<int>(error.answer), exit_status::kUsage);
  EXPECT_EQ(error.out, "");
  EXPECT_TRUE(error.err.starts_with("verbfault: --jobs")) << error.err;
  EXPECT_EQ(error.err.find('\n'), error.err.size() - 1) << error.err;
  const Parsed help = parse_with(parser, {"verbfault", "run", "--help"});
  EXPECT_EQ(std::get<int>(help.answer), 0);
  EXPECT_NE(help.out.find("--hang-after"), std::string::npos) << help.out;
  EXPECT_EQ(help.err, "");
  const std::vector<std::string> sweep = {"verbfault", "sweep", "--seeds", "2..9", "--", "a"};
  const Parsed after = parse_with(parser, sweep);
  ASSERT_TRUE(std::holds_alternative<CommandLine>(after.answer)) << after.err;
  EXPECT_EQ(command_line(after).sweep.jobs, 0u);
  EXPECT_EQ(command_line(after).sweep.first_seed, 2u);
  EXPECT_EQ(command_line(after).subcommand, Subcommand::sweep);
  EXPECT_EQ(after, parse_fresh(sweep));
}

// CLI11 2.1 keeps every option a parse saw until the App is destroyed:
// reused a million times, the fuzzer's parser held ~150 MB more.
TEST(CommandLineParser, AReusedParserHoldsNoMoreThanItsLastParse) {
  CommandLineParser parser;
  const std::vector<std::string> arguments = {
      "verbfault",  "sweep",  "--seeds", "1..9",      "--fault", "flush qp#0", "--fault",
      "flush qp#1", "--jobs", "2",       "--timeout", "5",       "--",         "a"};
  ASSERT_TRUE(std::holds_alternative<CommandLine>(parse_with(parser, arguments).answer));
  const std::size_t once = parser.remembered_options();
  EXPECT_GE(once, 5u);
  for (int i = 0; i < 1000; ++i) parse_with(parser, arguments);
  EXPECT_EQ(parser.remembered_options(), once);
}

// Every input of the fuzzer's corpus, in name order, through one parser:
// each answer, and what it printed, is what a new parser gives.
TEST(CommandLineParser, TheFuzzCorpusThroughOneParserGivesWhatNewParsersGive) {
  std::vector<std::filesystem::path> inputs;
  for (const auto& entry : std::filesystem::directory_iterator(VERBFAULT_CLI_CORPUS))
    inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  ASSERT_GE(inputs.size(), 50u) << VERBFAULT_CLI_CORPUS;
  CommandLineParser parser;
  std::size_t parsed = 0, commands = 0;
  for (const std::filesystem::path& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const auto arguments = fuzz::cli_arguments(text);
    if (!arguments) continue;
    const Parsed reused = parse_with(parser, *arguments);
    EXPECT_EQ(reused, parse_fresh(*arguments)) << path;
    ++parsed;
    if (std::holds_alternative<CommandLine>(reused.answer)) ++commands;
  }
  // The corpus holds command lines that parse, not only usage errors.
  EXPECT_GE(parsed, 50u);
  EXPECT_GE(commands, 10u);
}

}  // namespace
}  // namespace verbfault::cli

namespace verbfault::cli {
namespace {

EnvironmentReader environment(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto at = values.find(name);
    if (at == values.end()) return std::nullopt;
    return at->second;
  };
}

// --shard: given, from GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (1-based), or
// from a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (0-based).
TEST(Shard, GivenOrFromTheCiEnvironment) {
  EXPECT_EQ(parse_shard("2/4", environment({})), (Shard{2, 4}));
  EXPECT_EQ(parse_shard("auto", environment({{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "5"}})),
            (Shard{3, 5}));
  EXPECT_EQ(parse_shard("auto/4", environment({{"JOB_COMPLETION_INDEX", "0"}})), (Shard{1, 4}));
  EXPECT_EQ(parse_shard("auto/4", environment({{"JOB_COMPLETION_INDEX", "3"}})), (Shard{4, 4}));
  // GitLab's index wins over a stray completion index.
  EXPECT_EQ(parse_shard("auto/2", environment({{"CI_NODE_INDEX", "2"},
                                               {"JOB_COMPLETION_INDEX", "0"}})),
            (Shard{2, 2}));
  for (const std::string bad : {"0/4", "5/4", "1/0", "x/2", "2", "auto/", "auto/x", ""})
    EXPECT_THROW(parse_shard(bad, environment({{"CI_NODE_INDEX", "1"}})), std::invalid_argument)
        << bad;
  EXPECT_THROW(parse_shard("auto", environment({{"CI_NODE_INDEX", "0"}, {"CI_NODE_TOTAL", "2"}})),
               std::invalid_argument);
  EXPECT_THROW(parse_shard("auto/2", environment({{"JOB_COMPLETION_INDEX", "-1"}})),
               std::invalid_argument);
}

TEST(Shard, TheShardsPartitionTheRuns) {
  for (std::size_t position = 0; position < 50; ++position) {
    int owners = 0;
    for (unsigned index = 1; index <= 4; ++index) owners += in_shard(Shard{index, 4}, position);
    EXPECT_EQ(owners, 1) << position;
  }
}

}  // namespace
}  // namespace verbfault::cli

#include "shard.h"

#include "plan_names.h"

#include <cstdlib>
#include <stdexcept>

namespace verbfault::cli {

namespace {

constexpr std::uint64_t kMostShards = 1'000'000;

std::optional<std::uint64_t> number(const std::string& text) {
  return engine::parse_number(text);
}

// A variable's value as a number in [low, high], or a one-line error.
unsigned variable(const EnvironmentReader& environment, const std::string& name, std::uint64_t low,
                  std::uint64_t high, const std::string& meaning) {
  const std::optional<std::string> text = environment(name);
  const std::optional<std::uint64_t> value = text ? number(*text) : std::nullopt;
  if (!value || *value < low || *value > high)
    throw std::invalid_argument(name + "='" + text.value_or("") + "': expected " + meaning + ", " +
                                std::to_string(low) + ".." + std::to_string(high));
  return static_cast<unsigned>(*value);
}

}  // namespace

EnvironmentReader process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name.c_str())) return std::string(value);
    return std::nullopt;
  };
}

Shard parse_shard(const std::string& text, const EnvironmentReader& environment) {
  const std::string expected = "--shard '" + text +
                               "': expected I/N with 1 <= I <= N, auto (CI_NODE_INDEX and "
                               "CI_NODE_TOTAL) or auto/N (JOB_COMPLETION_INDEX or CI_NODE_INDEX)";
  const std::size_t slash = text.find('/');
  const std::string first = text.substr(0, slash);
  Shard shard;
  if (first == "auto") {
    if (slash == std::string::npos) {
      if (!environment("CI_NODE_TOTAL")) {
        if (environment("JOB_COMPLETION_INDEX"))
          throw std::invalid_argument(
              "--shard auto: JOB_COMPLETION_INDEX gives the index only: expected --shard auto/N "
              "with N the Indexed Job's completions");
        throw std::invalid_argument(
            "--shard auto: expected CI_NODE_INDEX and CI_NODE_TOTAL in the environment "
            "(GitLab's parallel:), or --shard auto/N in a Kubernetes Indexed Job");
      }
      shard.count = variable(environment, "CI_NODE_TOTAL", 1, kMostShards, "the number of jobs");
    } else {
      const std::optional<std::uint64_t> count = number(text.substr(slash + 1));
      if (!count || *count < 1 || *count > kMostShards) throw std::invalid_argument(expected);
      shard.count = static_cast<unsigned>(*count);
      if (environment("CI_NODE_TOTAL") && variable(environment, "CI_NODE_TOTAL", 1, kMostShards,
                                                   "the number of jobs") != shard.count)
        throw std::invalid_argument("--shard " + text + ": CI_NODE_TOTAL='" +
                                    *environment("CI_NODE_TOTAL") + "' says otherwise");
    }
    // GitLab numbers its jobs from 1, Kubernetes its completions from 0.
    if (environment("CI_NODE_INDEX"))
      shard.index = variable(environment, "CI_NODE_INDEX", 1, shard.count, "this job's number");
    else if (environment("JOB_COMPLETION_INDEX"))
      shard.index = variable(environment, "JOB_COMPLETION_INDEX", 0, shard.count - 1,
                             "the completion index") +
                    1;
    else
      throw std::invalid_argument("--shard " + text +
                                  ": expected CI_NODE_INDEX or JOB_COMPLETION_INDEX in the "
                                  "environment");
    return shard;
  }
  const std::optional<std::uint64_t> index =
      slash == std::string::npos ? std::nullopt : number(first);
  const std::optional<std::uint64_t> count =
      slash == std::string::npos ? std::nullopt : number(text.substr(slash + 1));
  if (!index || !count || *index < 1 || *index > *count || *count > kMostShards)
    throw std::invalid_argument(expected);
  shard.index = static_cast<unsigned>(*index);
  shard.count = static_cast<unsigned>(*count);
  return shard;
}

}  // namespace verbfault::cli

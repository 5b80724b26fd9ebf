// The one-line rule parser (harness/engine/plan/plan_cli.cpp,
// rule_fields.cpp) on arbitrary text, several rules separated by ';' as
// VERBFAULT_FAULTS and --fault give them. Contract (verbfault/plan.h): a
// PlanError of one line, or rules that round-trip through to_cli and,
// as a plan, through to_yaml.
#include "fuzz_check.h"
#include "verbfault/plan.h"

#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace verbfault;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Plan plan;
  try {
    plan = parse_rules(text, "fuzz");
  } catch (const PlanError& error) {
    fuzz::require_one_line(error.what(), "parse_rules' PlanError");
    return 0;
  }
  for (const Rule& rule : plan.rules) {
    const std::string line = to_cli(rule);
    fuzz::require(parse_rule(line, "to_cli") == rule, "to_cli round trip", line);
  }
  const std::string yaml = to_yaml(plan);
  fuzz::require(parse_plan_yaml(yaml, "to_yaml") == plan, "to_yaml round trip", yaml);
  return 0;
}

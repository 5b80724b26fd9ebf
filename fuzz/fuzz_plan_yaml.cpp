// The YAML plan parser (harness/engine/plan/plan_yaml.cpp, rule_fields.cpp)
// on arbitrary text. Contract (verbfault/plan.h): a PlanError of one line,
// or a plan that round-trips: to_yaml reads back to the same plan, and each
// rule's one-line form (to_cli) reads back to the same rule.
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
    plan = parse_plan_yaml(text, "fuzz.yaml");
  } catch (const PlanError& error) {
    fuzz::require_one_line(error.what(), "parse_plan_yaml's PlanError");
    return 0;
  }
  // Anything but a PlanError thrown from here on is a finding too: the
  // canonical forms of an accepted plan must be accepted.
  const std::string yaml = to_yaml(plan);
  fuzz::require(parse_plan_yaml(yaml, "to_yaml") == plan, "to_yaml round trip", yaml);
  for (const Rule& rule : plan.rules) {
    const std::string line = to_cli(rule);
    fuzz::require(parse_rule(line, "to_cli") == rule, "to_cli round trip", line);
  }
  return 0;
}

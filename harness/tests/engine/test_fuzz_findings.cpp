// What the fuzzers (fuzz/) found in the plan parsers, one test each, each
// failing before its fix.
#include "verbfault/plan.h"

#include <gtest/gtest.h>

#include <string>

namespace verbfault {
namespace {

// fuzz_rule_cli: a rule named "-" (letters, digits, '_', '.' and '-' are a
// name's characters) was written to YAML as `name: -`, a block sequence
// entry, which parse_plan_yaml refused: the plan did not round-trip.
// "null" likewise reads back as YAML's null.
TEST(FuzzFindings, RuleNamesThatAreYamlIndicatorsRoundTripThroughYaml) {
  for (const std::string name : {"-", "null", "Null", "NULL"}) {
    const Plan plan = parse_rules("verb_failure(reg_mr,EFAULT) name=" + name);
    const std::string yaml = to_yaml(plan);
    Plan again;
    EXPECT_NO_THROW(again = parse_plan_yaml(yaml)) << yaml;
    EXPECT_EQ(again, plan) << yaml;
  }
}

}  // namespace
}  // namespace verbfault

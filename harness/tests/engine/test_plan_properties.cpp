// The plan formats round-trip for any plan the public generators make
// (<verbfault/rapidcheck.h>): parse -> write -> parse gives an equal plan,
// in the YAML form and in the one-line form, and the YAML writer is
// canonical.
#include "verbfault/plan.h"
#include "verbfault/rapidcheck.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace verbfault {
namespace {

RC_GTEST_PROP(PlanProperties, EveryGeneratedPlanRoundTripsThroughYaml, (Plan plan)) {
  const std::string yaml = to_yaml(plan);
  RC_ASSERT(parse_plan_yaml(yaml) == plan);
  RC_ASSERT(to_yaml(parse_plan_yaml(yaml)) == yaml);
}

RC_GTEST_PROP(PlanProperties, EveryGeneratedRuleRoundTripsThroughTheOneLineForm, (Rule rule)) {
  RC_ASSERT(parse_rule(to_cli(rule)) == rule);
}

RC_GTEST_PROP(PlanProperties, EveryGeneratedPlanRoundTripsAsOneLine, (Plan plan)) {
  std::string line;
  for (const Rule& rule : plan.rules) line += (line.empty() ? "" : "; ") + to_cli(rule);
  RC_ASSERT(parse_rules(line) == plan);
}

}  // namespace
}  // namespace verbfault

// Counter-based decisions (engine/decision.h): triggers, counts, and the
// seeded draws being pure functions of (seed, rule, object, counter).
#include "decision.h"
#include "verbfault/plan.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace verbfault::engine {
namespace {

// The opportunities 1..n at which `rule` fires on one object, counting
// firings against `count` the way the engine does.
std::vector<std::uint64_t> firing(const Rule& rule, std::uint64_t n, std::uint64_t seed = 1,
                                  std::uint64_t key = 7) {
  std::vector<std::uint64_t> fired;
  for (std::uint64_t k = 1; k <= n; ++k)
    if (fires(rule, 0, seed, key, k, fired.size())) fired.push_back(k);
  return fired;
}

TEST(Decisions, DeterministicTriggersSelectTheirOpportunities) {
  EXPECT_EQ(firing(parse_rule("flush qp#0 nth=3"), 10), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(firing(parse_rule("flush qp#0 every=4"), 12), (std::vector<std::uint64_t>{4, 8, 12}));
  EXPECT_EQ(firing(parse_rule("flush qp#0 window=2..5"), 10),
            (std::vector<std::uint64_t>{2, 3, 4}));
  EXPECT_EQ(firing(parse_rule("flush qp#0"), 3), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(Decisions, CountLimitsFiringsPerObject) {
  EXPECT_EQ(firing(parse_rule("flush qp#0 every=2 count=2"), 20),
            (std::vector<std::uint64_t>{2, 4}));
  EXPECT_EQ(firing(parse_rule("flush qp#0 count=1"), 5), (std::vector<std::uint64_t>{1}));
}

TEST(Decisions, ProbabilityFiresAtAboutItsRateAndReplaysBySeed) {
  const Rule rule = parse_rule("flush qp#0 p=0.2");
  const auto fired = firing(rule, 20000);
  // Binomial(20000, 0.2): mean 4000, sd ~57; six sd either side.
  EXPECT_GT(fired.size(), 3650u);
  EXPECT_LT(fired.size(), 4350u);
  EXPECT_EQ(firing(rule, 20000), fired) << "the same seed, the same decisions";
  EXPECT_NE(firing(rule, 20000, /*seed=*/2), fired) << "another seed, other decisions";
  EXPECT_NE(firing(rule, 20000, 1, /*key=*/8), fired) << "another object, other decisions";
}

TEST(Decisions, DrawIsAPureFunctionOfItsTuple) {
  EXPECT_EQ(draw(1, 2, 3, 4), draw(1, 2, 3, 4));
  std::set<std::uint64_t> distinct;
  for (std::uint64_t seed : {1, 2})
    for (std::uint32_t rule : {0u, 1u})
      for (std::uint64_t key : {10, 11})
        for (std::uint64_t counter : {1, 2})
          for (std::uint64_t stream : {0, 1})
            distinct.insert(draw(seed, rule, key, counter, stream));
  EXPECT_EQ(distinct.size(), 32u) << "every element of the tuple changes the draw";
}

TEST(Decisions, ObjectKeysDistinguishKindAndIndex) {
  EXPECT_NE(object_key({ObjectKind::qp, 1}), object_key({ObjectKind::cq, 1}));
  EXPECT_NE(object_key({ObjectKind::qp, 1}), object_key({ObjectKind::qp, 2}));
}

TEST(Decisions, BelowAndUnitIntervalStayInRange) {
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const std::uint64_t bits = draw(9, 0, 0, i);
    EXPECT_LT(below(bits, 7), 7u);
    const double u = unit_interval(bits);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace verbfault::engine

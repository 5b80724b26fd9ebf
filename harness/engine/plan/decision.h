// Seeded, counter-based decisions: whether a rule fires at an opportunity.
//
// Every decision is a pure function of (seed, rule index, object key,
// per-object opportunity number): no generator state is shared, so a
// decision does not depend on thread interleaving or on other objects'
// traffic, and replaying a seed replays every decision.
#pragma once

#include "verbfault/plan.h"

#include <cstdint>

namespace verbfault::engine {

// splitmix64 finalizer over the tuple: 64 well-mixed bits.
std::uint64_t draw(std::uint64_t seed, std::uint32_t rule, std::uint64_t object_key,
                   std::uint64_t counter, std::uint64_t stream = 0);

// The bits of draw() as a double in [0, 1).
double unit_interval(std::uint64_t bits);

// A uniform integer in [0, bound) from draw()'s bits (bound > 0).
std::uint64_t below(std::uint64_t bits, std::uint64_t bound);

// Identifies an object in draw(): kind and creation index.
inline std::uint64_t object_key(ObjectRef ref) {
  return (static_cast<std::uint64_t>(ref.kind) << 32) | ref.index;
}

// Whether a probability trigger fires at (seed, rule, object_key,
// opportunity): a draw below its probability.
bool draws_below(double probability, std::uint32_t rule_index, std::uint64_t seed,
                 std::uint64_t object_key, std::uint64_t opportunity);

// Whether `trigger` selects opportunity `opportunity` (1-based) of the
// object; `fired_before` is how often the rule already fired on it, checked
// against `count`. Probability triggers draw from (seed, rule, object_key,
// opportunity). Inline: the fault engine asks at every opportunity of a
// rule, and for the counting triggers the answer is a compare.
inline bool fires(const Rule& rule, std::uint32_t rule_index, std::uint64_t seed,
                  std::uint64_t object_key, std::uint64_t opportunity, std::uint64_t fired_before) {
  if (rule.count && fired_before >= *rule.count) return false;
  const Trigger& t = rule.trigger;
  switch (t.kind) {
    case Trigger::Kind::always:
      return true;
    case Trigger::Kind::nth:
      return opportunity == t.n;
    case Trigger::Kind::every:
      return t.n != 0 && opportunity % t.n == 0;
    case Trigger::Kind::window:
      return t.from <= opportunity && opportunity < t.to;
    case Trigger::Kind::probability:
      return draws_below(t.probability, rule_index, seed, object_key, opportunity);
  }
  return false;
}

}  // namespace verbfault::engine

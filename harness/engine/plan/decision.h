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
std::uint64_t object_key(ObjectRef ref);

// Whether `trigger` selects opportunity `opportunity` (1-based) of the
// object; `fired_before` is how often the rule already fired on it, checked
// against `count`. Probability triggers draw from (seed, rule, object_key,
// opportunity).
bool fires(const Rule& rule, std::uint32_t rule_index, std::uint64_t seed, std::uint64_t object_key,
           std::uint64_t opportunity, std::uint64_t fired_before);

}  // namespace verbfault::engine

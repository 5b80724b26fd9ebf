// Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012; TigerBeetle's
// VOPR): rather than every fault kind at once at fixed rates, each seed
// also draws which kinds are enabled and at what rates, so that a sweep
// covers many fault mixes, including the sparse ones under which a bug
// that one kind hides behind another shows.
//
// A palette is a plan file whose rules may give ranges and choices:
//
//   enable: 0.5                 # each rule is enabled with this probability
//   rules:
//     - kind: completion_error
//       status: [rem_access_err, rem_op_err]   # a choice: one is drawn
//       probability: [0.002, 0.05]             # a range: drawn log-uniformly
//       count: 1
//     - kind: delayed_completion
//       polls: [1, 4]                          # an integer range: uniformly
//       probability: [0.01, 0.2]
//       enable: 0.3                            # this rule's own
//
// A two-element list of numbers is a range (a probability is drawn
// log-uniformly, a whole number uniformly, both ends included); any other
// list a choice; `window: [A, B]` keeps its meaning. At least one rule is
// enabled per seed. The drawn plan is an ordinary plan: a swarm failure is
// replayed by its seed and the rules it drew (`verbfault sweep` puts them
// on the reproduce line).
#pragma once

#include "verbfault/plan.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace verbfault::cli {

class Palette {
 public:
  // Reads a palette; throws PlanError "SOURCE:LINE: what: expected what".
  static Palette parse(std::string_view yaml, std::string_view source);
  static Palette from_file(const std::string& path);
  // The default palette: every fault kind a correct program survives,
  // either completing or reporting the failure cleanly (not drop_cq_event:
  // a lost event leaves a correct waiter waiting forever).
  static Palette standard();

  // The plan `seed` draws: a pure function of the palette and the seed.
  Plan draw(std::uint64_t seed) const;
  // The palette as YAML (its text, for `verbfault swarm`).
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::string source_;
};

// The default palette's text (documented in docs/cli.md, "swarm").
std::string_view standard_palette_text();

}  // namespace verbfault::cli

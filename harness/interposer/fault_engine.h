// The fault engine at run time: for each opportunity the interposer meets
// (a posted work request, a poll, an arm, an event, a call), the first rule
// of the plan that matches and whose trigger fires. Decisions are pure
// functions of (seed, rule, object, per-object opportunity number)
// (engine/decision.h); the per-(rule, object) counters are the only state.
//
// Owner: the interposer; every call happens under the interposer lock.
#pragma once

#include "object_registry.h"
#include "verbfault/plan.h"

#include <cstdint>
#include <array>
#include <optional>
#include <utility>
#include <vector>

namespace verbfault::interposer {

// Where an opportunity arises; each fault kind is decided at one site.
enum class Site : std::uint8_t {
  posted_wr,   // each work request of post_send / post_recv / post_srq_recv
  poll,        // each poll_cq call
  completion,  // each work completion the provider returns
  arm,         // each req_notify_cq call
  cq_event,    // each completion event ibv_get_cq_event returns
  call,        // each other hooked call on an object (create/modify/...)
};

Site site_of(const Rule& rule);

// What is known about the opportunity, for selectors.
struct Opportunity {
  Site site = Site::call;
  Tracked* object = nullptr;    // the object the counter belongs to
  const Tracked* qp = nullptr;  // the QP involved, if any
  std::optional<Opcode> opcode;
  std::optional<Side> side;
  std::optional<std::uint64_t> wr_id;
  std::optional<Verb> verb;  // the call, for verb_failure (none: no rule can fail it)
};

struct Decision {
  const Rule* rule = nullptr;
  std::uint32_t rule_index = 0;
  std::uint64_t object_key = 0;   // the object the rule counted on
  std::uint64_t opportunity = 0;  // its opportunity number there
};

class FaultEngine {
 public:
  void configure(Plan plan, std::uint64_t seed);
  bool empty() const { return plan_.rules.empty(); }
  const Plan& plan() const { return plan_; }
  std::uint64_t seed() const { return seed_; }

  // Whether any rule is decided at `site` (the fast paths skip the rest).
  bool has_rules(Site site) const { return !by_site_[static_cast<std::size_t>(site)].empty(); }
  // The first rule of one of `kinds` that matches and fires, if any.
  std::optional<Decision> decide(const Opportunity& opportunity,
                                 std::initializer_list<FaultKind> kinds);
  // How often each rule fired (coverage).
  const std::vector<std::uint64_t>& fired() const { return fired_total_; }

 private:
  // A rule as decide() first looks at it: what it needs to skip the rule
  // or count the opportunity without reading the Rule.
  struct SiteRule {
    std::uint32_t index = 0;     // in the plan
    std::uint32_t kind_bit = 0;  // 1 << its FaultKind
    bool plain = false;          // matches every opportunity of its site
    bool named = false;          // its selector names the object it counts on
  };

  bool matches(const Rule& rule, const Opportunity& opportunity) const;
  // The counter of rule `entry` for the object the opportunity counts on.
  Counter& counter(const SiteRule& entry, Tracked& object);

  Plan plan_;
  std::uint64_t seed_ = 0;
  // The rules of each site, in plan order.
  std::array<std::vector<SiteRule>, 6> by_site_;
  // Rules that name their object count on that one object: one counter
  // each. The others count per object (Tracked::rule_counters), reset when
  // the plan changes (generation_).
  std::vector<Counter> named_counters_;
  std::uint64_t generation_ = 0;
  std::vector<std::uint64_t> fired_total_;
};

}  // namespace verbfault::interposer

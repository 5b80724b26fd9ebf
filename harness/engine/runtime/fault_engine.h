// The fault engine at run time: for each opportunity the interposer meets
// (a posted work request, a poll, an arm, an event, a call), the first rule
// of the plan that matches and whose trigger fires. Decisions are pure
// functions of (seed, rule, object, per-object opportunity number)
// (plan/decision.h); the per-(rule, object) counters are their only state.
// Beside the decisions the engine keeps what they leave to do on each
// object (object_faults.h), and records every fault it injects through its
// Recorder (the interposer, which hands the record to the observers).
//
// Owner: the interposer, which calls every member under its lock; the
// engine is lent that lock for the injections that must release it while
// they drive the provider (injections.h).
#pragma once

#include "call_record.h"
#include "fault_kinds.h"
#include "object.h"
#include "object_faults.h"
#include "process_ref.h"
#include "run_lock.h"
#include "verbfault/plan.h"

#include <array>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace verbfault::engine {

// The site of the rule's kind (fault_kinds.h); verb_failure's is its verb's.
Site site_of(const Rule& rule);

// What is known about the opportunity, for selectors.
struct Opportunity {
  Site site = Site::call;
  const record::Object* object = nullptr;  // the object the counter belongs to
  const record::Object* qp = nullptr;      // the QP involved, if any
  std::optional<Opcode> opcode;
  std::optional<Side> side;
  std::optional<std::uint64_t> wr_id;
  std::optional<Verb> verb;  // the call, for verb_failure (none: no rule can fail it)
  // The CM step: the fault kind whose opportunity this command or event
  // is (cm_addr_error for a resolve, cm_lost_disconnect for DISCONNECTED...).
  std::optional<FaultKind> cm_step;
  // The event, at a cm_event site; at the cm_command site, the connection
  // established (cm_unreachable after ESTABLISHED).
  std::optional<CmEvent> cm_event;
};

struct Decision {
  const Rule* rule = nullptr;
  std::uint32_t rule_index = 0;
  std::uint64_t object_key = 0;   // the object the rule counted on
  std::uint64_t opportunity = 0;  // its opportunity number there
  // The object counted on: the one the selector names, or else the
  // opportunity's own. (counted, opportunity) make the firing an explicit
  // rule `KIND counted nth=opportunity` (verbfault minimize).
  ObjectRef counted{};
};

// Where the engine's records go (the interposer: to the observers).
class Recorder {
 public:
  virtual void record(const record::CallRecord& record) = 0;

 protected:
  ~Recorder() = default;
};

class FaultEngine {
 public:
  // `lock`: the interposer's, held for every call (injections.h releases
  // and takes it again around provider calls).
  FaultEngine(record::RunLock& lock, Recorder& recorder) : lock_(lock), recorder_(recorder) {}

  // A rule whose proc selector does not name `self` (process_ref.h) is
  // left out of every site here, once: it never fires in this process and
  // costs its calls nothing, and the other rules keep their indexes.
  void configure(Plan plan, std::uint64_t seed, const ProcessIdentity& self);
  bool empty() const { return plan_.rules.empty(); }
  const Plan& plan() const { return plan_; }
  std::uint64_t seed() const { return seed_; }

  // ---- objects ----
  // A new object in `object.slot` (it stays in place until removed).
  ObjectFaults& object_added(const record::Object& object);
  // Forgets the object: its held completions, injected events and fds go.
  void object_removed(const record::Object& object);
  ObjectFaults& faults(const record::Object& object) { return objects_[object.slot]; }
  const ObjectFaults& faults(const record::Object& object) const { return objects_[object.slot]; }
  // The state of the live object at `handle` (a linear search: for the
  // injections, which run rarely and without a slot).
  ObjectFaults* find(const void* handle);
  ObjectFaults& faults(std::uint32_t slot) { return objects_[slot]; }
  // The context's state of an object (nullptr: it has no known context).
  ObjectFaults* context_faults(const record::Object& object) {
    return object.context_slot < objects_.size() && objects_[object.context_slot].object
               ? &objects_[object.context_slot]
               : nullptr;
  }
  // Whether any object holds completions back (delayed_completion).
  bool holds_completions() const {
    for (const ObjectFaults& faults : objects_)
      if (!faults.held.empty()) return true;
    return false;
  }
  // The live objects of `kind`, in creation order (for the injections
  // that reach every QP of a CQ or of a context).
  std::vector<const record::Object*> live(ObjectKind kind) const;

  // ---- decisions ----
  // Whether any rule is decided at `site` (the fast paths skip the rest).
  bool has_rules(Site site) const { return !by_site_[static_cast<std::size_t>(site)].empty(); }
  // Whether any rule of one of `kinds` (kinds_mask()) is decided at `site`:
  // a fast path tests this before it builds an Opportunity.
  bool has_rules(Site site, std::uint32_t kinds) const {
    return (site_kinds_[static_cast<std::size_t>(site)] & kinds) != 0;
  }
  static_assert(static_cast<int>(FaultKind::cm_disconnect) < 32, "fault kinds fit a bitmask");
  static constexpr std::uint32_t kind_bit(FaultKind kind) {
    return std::uint32_t{1} << static_cast<unsigned>(kind);
  }
  static constexpr std::uint32_t kinds_mask(std::initializer_list<FaultKind> kinds) {
    std::uint32_t mask = 0;
    for (FaultKind kind : kinds) mask |= kind_bit(kind);
    return mask;
  }
  // The first rule of one of `kinds` that matches and fires, if any.
  std::optional<Decision> decide(const Opportunity& opportunity,
                                 std::initializer_list<FaultKind> kinds);
  // How often each rule fired (coverage).
  const std::vector<std::uint64_t>& fired() const { return fired_total_; }

  // ---- what decisions leave ----
  // Records an injected fault with the level it used, then `detail`.
  void record_fault(const record::Object& object, const Decision& decision, std::string_view level,
                    std::initializer_list<record::Field> detail = {});
  void record(const record::CallRecord& record) { recorder_.record(record); }
  // Set once a work request was doomed (an injected error): from then on
  // polled completions are checked for rewrites (completions.h).
  bool may_rewrite_completions = false;
  record::RunLock& lock() { return lock_; }

 private:
  // A rule as decide() first looks at it: what it needs to skip the rule
  // or count the opportunity without reading the Rule.
  struct SiteRule {
    std::uint32_t index = 0;     // in the plan
    std::uint32_t kind_bit = 0;  // 1 << its FaultKind
    bool plain = false;          // matches every opportunity of its site
    bool named = false;          // its selector names the object it counts on
    // An nth trigger without a count, checked here without reading the
    // Rule (the usual rule that cannot fire at this opportunity).
    bool nth_only = false;
    std::uint64_t nth = 0;
  };

  bool matches(const Rule& rule, const Opportunity& opportunity) const;
  // The counter of rule `entry` for the object the opportunity counts on.
  Counter& counter(const SiteRule& entry, const record::Object& object);

  record::RunLock& lock_;
  Recorder& recorder_;
  Plan plan_;
  std::uint64_t seed_ = 0;
  // The rules of each site, in plan order.
  std::array<std::vector<SiteRule>, 8> by_site_;
  std::array<std::uint32_t, 8> site_kinds_{};  // kind_bit()s of each site's rules
  // Rules that name their object count on that one object: one counter
  // each. The others count per object: counters_[slot * rules + rule], one
  // flat table (a decision touches no object's own state), zeroed for an
  // object when it is added and for all when the plan changes.
  std::vector<Counter> named_counters_;
  std::vector<Counter> counters_;
  std::vector<std::uint64_t> fired_total_;
  // By registry slot; a deque, so an entry never moves.
  std::deque<ObjectFaults> objects_;
};

}  // namespace verbfault::engine

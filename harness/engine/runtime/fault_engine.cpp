#include "fault_engine.h"

#include "async_event.h"
#include "decision.h"
#include "injections.h"

#include <algorithm>

namespace verbfault::engine {

Site site_of(const Rule& rule) {
  if (rule.kind != FaultKind::verb_failure) return info(rule.kind).site;
  switch (*rule.verb) {
    case Verb::post_send:
    case Verb::post_recv:
    case Verb::post_srq_recv:
      return Site::posted_wr;
    case Verb::poll_cq:
      return Site::poll;
    case Verb::req_notify_cq:
      return Site::arm;
    default:
      return Site::call;
  }
}

namespace {

// Whether matches() holds for every opportunity of the rule's site: no
// selector, and none of the kind-specific conditions below.
bool matches_all(const Rule& rule) {
  if (!info(rule.kind).selector_decides) return false;
  const Selector& s = rule.selector;
  return !s.object && !s.qp_type && !s.opcode && !s.side && !s.wr_id;
}

}  // namespace

void FaultEngine::configure(Plan plan, std::uint64_t seed, const ProcessIdentity& self) {
  plan_ = std::move(plan);
  seed_ = seed;
  for (auto& rules : by_site_) rules.clear();
  site_kinds_.fill(0);
  for (std::uint32_t i = 0; i < plan_.rules.size(); ++i) {
    const Rule& rule = plan_.rules[i];
    if (!for_process(rule, self)) continue;
    site_kinds_[static_cast<std::size_t>(site_of(rule))] |= kind_bit(rule.kind);
    by_site_[static_cast<std::size_t>(site_of(rule))].push_back(
        {i, kind_bit(rule.kind), matches_all(rule), rule.selector.object.has_value(),
         rule.trigger.kind == Trigger::Kind::nth && !rule.count, rule.trigger.n});
  }
  named_counters_.assign(plan_.rules.size(), Counter{});
  counters_.assign(objects_.size() * plan_.rules.size(), Counter{});
  fired_total_.assign(plan_.rules.size(), 0);
}

ObjectFaults& FaultEngine::object_added(const record::Object& object) {
  // A deque: growing it at the end moves no entry (references stay valid).
  if (object.slot >= objects_.size()) objects_.resize(object.slot + 1);
  objects_[object.slot] = ObjectFaults{};
  objects_[object.slot].object = &object;
  // Its counters start at 0 (a slot is reused after its object is gone).
  const std::size_t rules = plan_.rules.size();
  if (counters_.size() < objects_.size() * rules) counters_.resize(objects_.size() * rules);
  std::fill_n(counters_.begin() + static_cast<std::ptrdiff_t>(object.slot * rules), rules,
              Counter{});
  return objects_[object.slot];
}

void FaultEngine::object_removed(const record::Object& object) {
  if (object.slot < objects_.size()) objects_[object.slot] = ObjectFaults{};
}

std::vector<const record::Object*> FaultEngine::live(ObjectKind kind) const {
  std::vector<const record::Object*> found;
  for (const ObjectFaults& faults : objects_)
    if (faults.object != nullptr && faults.object->ref.kind == kind) found.push_back(faults.object);
  std::sort(found.begin(), found.end(), [](const record::Object* a, const record::Object* b) {
    return a->ref.index < b->ref.index;
  });
  return found;
}

ObjectFaults* FaultEngine::find(const void* handle) {
  for (ObjectFaults& faults : objects_)
    if (faults.object != nullptr && faults.object->handle == handle) return &faults;
  return nullptr;
}

void FaultEngine::record_fault(const record::Object& object, const Decision& decision,
                               std::string_view level,
                               std::initializer_list<record::Field> detail) {
  record::CallRecord fault(object.id());
  fault.add("fault", to_string(decision.rule->kind))
      .add("rule", decision.rule_index)
      .add("level", level)
      .add("nth", decision.opportunity);
  // The firing as an explicit rule needs the object the rule counted on
  // when it is not the record's own (a context's rule fired on its QP).
  if (!(decision.counted == object.ref)) fault.add("per", decision.counted);
  for (const record::Field& field : detail) fault.add(field.key, field.value);
  recorder_.record(fault);
}

Counter& FaultEngine::counter(const SiteRule& entry, const record::Object& object) {
  if (entry.named) return named_counters_[entry.index];
  return counters_[object.slot * plan_.rules.size() + entry.index];
}

bool FaultEngine::matches(const Rule& rule, const Opportunity& at) const {
  const Selector& s = rule.selector;
  if (rule.kind == FaultKind::verb_failure && rule.verb != at.verb) return false;
  // A CM rule counts the commands or events of its own step only (a
  // connect is the opportunity of cm_unreachable and cm_reject alike).
  if (rule.kind == FaultKind::cm_disconnect) {
    // A WR posted on a QP an rdma_cm id connected (record::Object::cm_id).
    if (at.qp == nullptr || at.qp->cm_id_handle == nullptr) return false;
    return !s.object || at.qp->cm_id == *s.object;
  }
  if (is_cm_fault(rule.kind)) {
    // Each kind counts its own step; a connect is cm_unreachable's and
    // cm_reject's, an establishment (cm_event at the command site) only
    // cm_unreachable's; cm_delay's events are those of its type.
    const FaultKind step =
        rule.kind == FaultKind::cm_reject ? FaultKind::cm_unreachable : rule.kind;
    if (at.cm_step != step) return false;
    if (rule.kind == FaultKind::cm_reject && at.cm_event) return false;
    if (rule.kind == FaultKind::cm_delay && at.cm_event != rule.cm_event) return false;
  }
  // An affiliated event happens on an object of its own kind (a QP event on
  // a QP...); port and device events on any object of the context.
  if (rule.kind == FaultKind::async_event) {
    const ObjectKind element = record::element_kind(*rule.event);
    if (element != ObjectKind::context && at.object->ref.kind != element) return false;
  }
  // Retry exhaustion is the requester's, on a reliable connection; an RNR
  // NAK answers only a request that consumes a receive WR (IBA 9.7.5.2.8).
  if (rule.kind == FaultKind::rnr_retry_exhausted || rule.kind == FaultKind::retry_exhausted) {
    if (at.side != Side::send || at.qp == nullptr || at.qp->qp_type != IBV_QPT_RC) return false;
    if (rule.kind == FaultKind::rnr_retry_exhausted && at.opcode != Opcode::send &&
        at.opcode != Opcode::send_with_imm && at.opcode != Opcode::rdma_write_with_imm)
      return false;
  }
  if (s.object) {
    const bool same_object = at.object->ref == *s.object || (at.qp && at.qp->ref == *s.object);
    const bool same_context =
        s.object->kind == ObjectKind::context && at.object->context == *s.object;
    if (!same_object && !same_context) return false;
  }
  if (s.qp_type) {
    const record::Object* qp =
        at.qp ? at.qp : (at.object->ref.kind == ObjectKind::qp ? at.object : nullptr);
    if (qp == nullptr || qp->qp_type != *s.qp_type) return false;
  }
  if (s.opcode && at.opcode != s.opcode) return false;
  if (s.side && at.side != s.side) return false;
  if (s.wr_id && (!at.wr_id || (*at.wr_id & s.wr_id_mask) != *s.wr_id)) return false;
  return true;
}

std::optional<Decision> FaultEngine::decide(const Opportunity& at,
                                            std::initializer_list<FaultKind> kinds) {
  std::uint32_t wanted = 0;
  for (FaultKind kind : kinds) wanted |= kind_bit(kind);
  std::optional<Decision> decision;
  // Every rule that matches counts the opportunity, even behind one that
  // fires: a rule's opportunity numbers do not depend on the rules before
  // it. A rule that cannot fire costs a mask test, a counter increment and
  // its trigger's compare (engine::fires draws only for probabilities).
  for (const SiteRule& entry : by_site_[static_cast<std::size_t>(at.site)]) {
    if ((wanted & entry.kind_bit) == 0) continue;
    const Rule& rule = plan_.rules[entry.index];
    if (!entry.plain && !matches(rule, at)) continue;
    Counter& count = counter(entry, *at.object);
    const std::uint64_t opportunity = ++count.opportunities;
    if (decision) continue;  // an earlier rule already fires here
    if (entry.nth_only && opportunity != entry.nth) [[likely]]
      continue;  // engine::fires would say the same
    // Counted per selected object: per the object the selector names, or
    // else per the object of the opportunity (each QP, CQ... on its own).
    const ObjectRef counted = entry.named ? *rule.selector.object : at.object->ref;
    const std::uint64_t key = engine::object_key(counted);
    if (engine::fires(rule, entry.index, seed_, key, opportunity, count.fired)) [[unlikely]] {
      ++count.fired;
      ++fired_total_[entry.index];
      decision = Decision{&rule, entry.index, key, opportunity, counted};
    }
  }
  return decision;
}

}  // namespace verbfault::engine

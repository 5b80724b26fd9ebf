// The parameters a fault kind takes, checked once for every way a rule is
// made (files, the one-line form, Session, generators).
#include "fault_kinds.h"
#include "plan_names.h"

#include <algorithm>
#include "process_ref.h"

namespace verbfault {

namespace {

[[noreturn]] void reject(std::string_view source, const Rule& rule, const std::string& what) {
  throw PlanError(std::string(source) + ": " + std::string(to_string(rule.kind)) + ": " + what);
}

}  // namespace

void validate(const Rule& rule, std::string_view source) {
  const FaultKind k = rule.kind;
  // Each parameter a rule can have: whether it is there, and whether its
  // value does something (a success status or 0 polls does not).
  struct Parameter {
    std::string_view name;
    bool given;
    bool effective;
  };
  const Parameter given[] = {
      {"status", rule.status.has_value(), rule.status && *rule.status != IBV_WC_SUCCESS},
      {"event", rule.event.has_value(), rule.event.has_value()},
      {"verb", rule.verb.has_value(), rule.verb.has_value()},
      {"error", rule.error.has_value(), rule.error && *rule.error > 0},
      {"polls", rule.polls.has_value(), rule.polls && *rule.polls != 0},
      {"port", rule.port.has_value(), rule.port.has_value()},
      {"cm_event", rule.cm_event.has_value(), rule.cm_event.has_value()},
      {"delay_ms", rule.delay_ms.has_value(), rule.delay_ms && *rule.delay_ms != 0},
  };
  const engine::FaultKindInfo& kind = engine::info(k);
  auto takes = [&](std::string_view name) {
    return std::find(kind.parameters.begin(), kind.parameters.end(), name) !=
           kind.parameters.end();
  };
  for (const Parameter& parameter : given)
    if (parameter.given && !takes(parameter.name))
      reject(source, rule,
             "parameter '" + std::string(parameter.name) +
                 "': expected no such parameter for this kind");
  if (!kind.missing.empty())
    for (const Parameter& parameter : given)
      if (takes(parameter.name) && !parameter.effective)
        reject(source, rule, std::string(kind.missing));
  // The CM's faults act on CM ids, the others on verbs objects; a CM id has
  // no QP type, opcode, side or work request of its own to select by.
  const Selector& s = rule.selector;
  if (is_cm_fault(k)) {
    if (s.object && s.object->kind != ObjectKind::cm_id)
      reject(source, rule,
             "object '" + to_string(*s.object) + "': expected an rdma_cm id such as cm_id#0");
    if (s.qp_type || s.opcode || s.side || s.wr_id)
      reject(source, rule, "selector qp_type/opcode/side/wr_id: expected only object and proc");
  } else if (s.object && s.object->kind == ObjectKind::cm_id) {
    reject(source, rule,
           "object '" + to_string(*s.object) + "': expected a verbs object (cm_id is for cm_*)");
  }
  if (!rule.selector.wr_id && rule.selector.wr_id_mask != ~std::uint64_t{0})
    reject(source, rule, "wr_id_mask without wr_id: expected both");
  if (rule.port && *rule.port == 0) reject(source, rule, "port 0: expected 1..255");
  if (rule.selector.proc && !engine::valid_process(*rule.selector.proc))
    reject(source, rule,
           "proc '" + to_string(*rule.selector.proc) + "': expected " + engine::kProcessExpected);
  const Trigger& t = rule.trigger;
  switch (t.kind) {
    case Trigger::Kind::always:
      break;
    case Trigger::Kind::nth:
    case Trigger::Kind::every:
      if (t.n == 0) reject(source, rule, "trigger 0: expected a number >= 1");
      break;
    case Trigger::Kind::window:
      if (t.from == 0 || t.from >= t.to) reject(source, rule, "window: expected 1 <= start < end");
      break;
    case Trigger::Kind::probability:
      if (!(t.probability > 0.0 && t.probability <= 1.0))
        reject(source, rule, "probability: expected a number in (0, 1]");
      break;
  }
  if (rule.count && *rule.count == 0) reject(source, rule, "count 0: expected a number >= 1");
}

}  // namespace verbfault

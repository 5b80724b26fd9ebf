// The parameters a fault kind takes, checked once for every way a rule is
// made (files, the one-line form, Session, generators).
#include "plan_names.h"
#include "process_ref.h"

namespace verbfault {

namespace {

[[noreturn]] void reject(std::string_view source, const Rule& rule, const std::string& what) {
  throw PlanError(std::string(source) + ": " + std::string(to_string(rule.kind)) + ": " + what);
}

}  // namespace

void validate(const Rule& rule, std::string_view source) {
  const FaultKind k = rule.kind;
  auto only = [&](bool has, bool allowed, const char* parameter) {
    if (has && !allowed)
      reject(
          source, rule,
          std::string("parameter '") + parameter + "': expected no such parameter for this kind");
  };
  only(rule.status.has_value(), k == FaultKind::completion_error, "status");
  only(rule.event.has_value(), k == FaultKind::async_event, "event");
  only(rule.verb.has_value(), k == FaultKind::verb_failure, "verb");
  only(rule.error.has_value(), k == FaultKind::verb_failure, "error");
  only(rule.polls.has_value(), k == FaultKind::delayed_completion, "polls");
  only(rule.port.has_value(), k == FaultKind::port_down, "port");
  only(rule.cm_event.has_value(), k == FaultKind::cm_delay, "cm_event");
  only(rule.delay_ms.has_value(), k == FaultKind::cm_delay, "delay_ms");
  if (k == FaultKind::cm_delay && (!rule.cm_event || !rule.delay_ms || *rule.delay_ms == 0))
    reject(source, rule, "missing event or delay: expected e.g. cm_delay(established,50)");
  if (k == FaultKind::completion_error && (!rule.status || *rule.status == IBV_WC_SUCCESS))
    reject(source, rule,
           "missing or success status: expected an error status such as rem_access_err");
  if (k == FaultKind::async_event && !rule.event)
    reject(source, rule, "missing event: expected an event type such as qp_fatal");
  if (k == FaultKind::verb_failure && (!rule.verb || !rule.error || *rule.error <= 0))
    reject(source, rule, "missing verb or error: expected e.g. verb_failure(post_send,ENOMEM)");
  if (k == FaultKind::delayed_completion && (!rule.polls || *rule.polls == 0))
    reject(source, rule, "missing polls: expected a number of polls >= 1");
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

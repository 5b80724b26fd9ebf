#include "post_decisions.h"

#include "fault_engine.h"

namespace verbfault::engine {

namespace {

// A WR whose completion will become an error: from now on polled
// completions are looked at for rewrites (completions.h).
void doom(FaultEngine& engine, const record::Object& qp, DoomedWr wr) {
  engine.may_rewrite_completions = true;
  engine.faults(qp).doomed.push_back(wr);
}

}  // namespace

void decide_wr(FaultEngine& engine, const record::Object& object, const record::Object* qp,
               Verb verb, const PostedWr& wr, std::size_t index, PostPlan& plan, bool can_cause) {
  const bool unsignaled_send = wr.side == Side::send && !(wr.send_flags & IBV_SEND_SIGNALED);
  // Behind a WR that will complete in error everything on the QP is
  // flushed, signaled or not (IBA 10.7.3.1): the provider may execute this
  // one before the error is seen, so it is forced signaled, and its
  // completion becomes the flush when polled.
  if (unsignaled_send && qp != nullptr && !engine.faults(*qp).doomed.empty())
    plan.force_signaled.push_back(index);
  if (wr.side == Side::send && !object.simulated) {
    // A port the engine took down (real provider only: a simulated port
    // goes down itself): RC sends are not answered and end in retry
    // exhaustion.
    const ObjectFaults* context = engine.context_faults(object);
    if (qp != nullptr && qp->qp_type == IBV_QPT_RC && context != nullptr && context->port_down) {
      doom(engine, *qp, {wr.wr_id, Side::send, IBV_WC_RETRY_EXC_ERR, UINT32_MAX});
      if (unsignaled_send) plan.force_signaled.push_back(index);
      return;
    }
  }
  Opportunity at;
  at.site = Site::posted_wr;
  at.object = &object;
  at.qp = qp;
  at.verb = verb;
  at.wr_id = wr.wr_id;
  at.side = wr.side;
  at.opcode = wr.opcode;
  // An SRQ's receives belong to no QP yet: only verb_failure applies.
  auto decision =
      qp == nullptr
          ? engine.decide(at, {FaultKind::verb_failure})
          : engine.decide(at, {FaultKind::verb_failure, FaultKind::flush,
                               FaultKind::completion_error, FaultKind::rnr_retry_exhausted,
                               FaultKind::retry_exhausted, FaultKind::cm_disconnect});
  if (!decision) return;
  const Rule& rule = *decision->rule;
  switch (rule.kind) {
    case FaultKind::verb_failure: {
      plan.stop = index;
      plan.error = *rule.error;
      const std::string error = errno_name(*rule.error);
      engine.record_fault(object, *decision, "effect", {{"wr", index}, {"errno", error}});
      break;
    }
    case FaultKind::flush:
      plan.stop = index;
      plan.flush = true;
      engine.record_fault(object, *decision, object.simulated ? "cause" : "effect",
                          {{"wr", index}});
      break;
    case FaultKind::cm_disconnect:
      // The peer is gone before this WR: what it sent has arrived, what is
      // outstanding and this WR are flushed (the QP to ERR, as the
      // transport's retries would leave it), and the id hears DISCONNECTED.
      plan.stop = index;
      plan.flush = true;
      plan.cm_disconnect = qp->cm_id_handle;
      engine.record_fault(object, *decision, "cause", {{"wr", index}, {"cm_id", qp->cm_id}});
      break;
    case FaultKind::rnr_retry_exhausted:
    case FaultKind::retry_exhausted:
      if (can_cause) {
        // The simulated fabric really NAKs or drops the message until the
        // requester gives up; the responder never sees it.
        const bool rnr = rule.kind == FaultKind::rnr_retry_exhausted;
        plan.caused.emplace_back(
            index, rnr ? provider::SendFailure::rnr_nak : provider::SendFailure::no_answer);
        engine.record_fault(
            object, *decision, "cause",
            {{"wr", index}, {"status", rnr ? "rnr_retry_exc_err" : "retry_exc_err"}});
        break;
      }
      [[fallthrough]];
    default: {
      // The WR's completion becomes the error (effect level): forced to be
      // signaled, as an error completion always is.
      const ibv_wc_status status = rule.kind == FaultKind::completion_error ? *rule.status
                                   : rule.kind == FaultKind::rnr_retry_exhausted
                                       ? IBV_WC_RNR_RETRY_EXC_ERR
                                       : IBV_WC_RETRY_EXC_ERR;
      doom(engine, *qp, {wr.wr_id, wr.side, status, decision->rule_index});
      if (unsignaled_send) plan.force_signaled.push_back(index);
      engine.record_fault(object, *decision, "effect",
                          {{"wr", index}, {"status", to_string(status)}});
    }
  }
}

}  // namespace verbfault::engine

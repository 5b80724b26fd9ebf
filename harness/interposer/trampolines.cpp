// The fast-path trampolines: ibv_poll_cq, ibv_post_send, ibv_post_recv,
// ibv_req_notify_cq and ibv_post_srq_recv are inline in verbs.h and jump
// through context->ops, so the interposer replaces those pointers. Each
// trampoline runs the hooks, then the provider's saved op.
#include "trampolines.h"

#include "thread_calls.h"

#include "completions.h"
#include "decision.h"
#include "extended_cq_trampolines.h"
#include "extended_qp_trampolines.h"
#include "held_completions.h"
#include "hang_watchdog.h"
#include "opcodes.h"
#include "post_decisions.h"
#include "injections.h"
#include "cm_faults.h"
#include "observation.h"
#include "saved_ops.h"
#include "run.h"
#include "conditions.h"

#include <cerrno>
#include <cstring>
#include <vector>

namespace verbfault::interposer {

namespace {

// The start of every fast path (lock held): the object's record, after the
// call-site faults of the call (interposer.h before_call). Returns nullptr
// when the object is not the harness's (or went away while a fault was
// injected): the provider's op is then called untouched, without the lock.
Tracked* enter(Run& run, std::unique_lock<record::RunLock>& lock, const void* object,
               OnDeadDevice on_dead, int& error) {
  error = 0;
  Tracked* tracked = run.registry.find(object);
  if (tracked == nullptr) {
    lock.unlock();
    return nullptr;
  }
  // Nothing to do at the call site without call-site rules, unless a real
  // device may have been declared dead (call_site_faults).
  const bool may_be_dead = !tracked->simulated && on_dead == OnDeadDevice::fail;
  if (may_be_dead || run.engine.has_rules(Site::call))
    error = call_site_faults(run, lock, tracked, std::nullopt, on_dead);
  if (tracked == nullptr) lock.unlock();
  return tracked;
}

// ---- post_send / post_recv -------------------------------------------------------

template <class Wr>
record::WrSummary summary_of(const Tracked& object, const Wr& wr) {
  record::WrSummary summary;
  summary.wr_id = wr.wr_id;
  constexpr bool kSend = std::is_same_v<Wr, ibv_send_wr>;
  const int sges = object.readable_sges(wr.num_sge, wr.sg_list, kSend);
  for (int i = 0; i < sges; ++i) summary.length += wr.sg_list[i].length;
  if constexpr (std::is_same_v<Wr, ibv_send_wr>) {
    if (auto opcode = record::opcode_of(wr.opcode))
      summary.opcode = static_cast<std::uint8_t>(*opcode);
    summary.flags = wr.send_flags;
    summary.has_flags = true;
  } else {
    summary.opcode = static_cast<std::uint8_t>(Opcode::recv);
  }
  return summary;
}

// Decides every WR of the list (lock held), records the faults, and fills
// `wrs` with what the trace shows of each WR.
template <class Wr>
PostPlan decide_post(Run& run, Tracked& object, Tracked* qp, Verb verb, Wr* list,
                     std::vector<record::WrSummary>& wrs) {
  PostPlan plan;
  // Only ibv_post_send on a simulated QP can hand the device conditions.
  const bool can_cause = verb == Verb::post_send && object.simulated;
  // Nothing to decide without posted-WR rules, doomed WRs ahead, or a port
  // the interposer took down (real providers only).
  const engine::ObjectFaults* context =
      object.simulated ? nullptr : run.engine.context_faults(object);
  const bool decide = run.engine.has_rules(Site::posted_wr) ||
                      (qp && !qp->faults->doomed.empty()) ||
                      (context != nullptr && context->port_down);
  wrs.clear();
  std::size_t index = 0;
  for (Wr* wr = list; wr != nullptr; wr = wr->next, ++index) {
    wrs.push_back(summary_of(object, *wr));
    if (!decide || plan.stop != SIZE_MAX) continue;
    PostedWr posted;
    posted.wr_id = wr->wr_id;
    if constexpr (std::is_same_v<Wr, ibv_send_wr>) {
      posted.side = Side::send;
      posted.opcode = record::opcode_of(wr->opcode);
      posted.send_flags = wr->send_flags;
    } else {
      posted.side = Side::recv;
      posted.opcode = Opcode::recv;
    }
    engine::decide_wr(run.engine, object, qp, verb, posted, index, plan, can_cause);
  }
  return plan;
}

// Posts `list` with the saved op, applying the plan: WRs before `stop` are
// posted, then the fault takes effect. *bad_wr always points into the
// application's own list. `real`: the QP is a real provider's.
template <class Wr, class Post>
int execute_post(Wr* list, Wr** bad_wr, const PostPlan& plan, Post post, ibv_qp* qp, bool real) {
  std::vector<Wr> copy;
  for (Wr* wr = list; wr != nullptr; wr = wr->next) copy.push_back(*wr);
  for (std::size_t i = 0; i + 1 < copy.size(); ++i) copy[i].next = &copy[i + 1];
  if constexpr (std::is_same_v<Wr, ibv_send_wr>)
    for (std::size_t i : plan.force_signaled) copy[i].send_flags |= IBV_SEND_SIGNALED;
  auto original = [&](std::size_t index) {
    Wr* wr = list;
    for (std::size_t i = 0; i < index; ++i) wr = wr->next;
    return wr;
  };
  auto post_range = [&](std::size_t from, std::size_t to) -> int {
    if (from >= to) return 0;
    copy[to - 1].next = nullptr;
    Wr* bad = nullptr;
    int result = post(&copy[from], &bad, from);
    if (to < copy.size()) copy[to - 1].next = &copy[to];
    if (result != 0 && bad != nullptr)
      *bad_wr = original(static_cast<std::size_t>(bad - copy.data()));
    return result;
  };
  const std::size_t stop = std::min(plan.stop, copy.size());
  if (int result = post_range(0, stop)) return result;
  if (plan.stop == SIZE_MAX) return 0;
  if (plan.error != 0) {
    *bad_wr = original(stop);
    return plan.error;
  }
  if constexpr (std::is_same_v<Wr, ibv_recv_wr>) {
    if (real) {
      // A receive posted to a QP already in ERR is never flushed by rxe
      // (docs/architecture.md, "Where the simulated device follows the spec
      // rather than rxe"), which the application would wait for forever:
      // on a real provider the receives are posted first and the QP then
      // moved to ERR, which flushes them with everything outstanding. The
      // application sees the same: they complete as flushes.
      const int result = post_range(stop, copy.size());
      inject::qp_to_error(qp);
      return result;
    }
  }
  inject::qp_to_error(qp);  // flush: the rest is posted in ERR and flushed
  return post_range(stop, copy.size());
}

// One lock acquisition when no rule fires: the decisions, the provider's
// post (which never blocks) and the record happen under it, so the record
// is in the order the provider saw the posts.
template <class Object, class Wr, class Op>
[[gnu::noinline]] int interpose_post(Verb verb, Object* object, ibv_qp* qp, Wr* list, Wr** bad_wr,
                                     Op op) {
  Run& run = process_run();
  std::unique_lock lock(run.mutex);
  int error = 0;
  Tracked* tracked = enter(run, lock, object, OnDeadDevice::fail, error);
  // Nothing of the list was posted: bad_wr points at its first WR.
  if (error != 0) return *bad_wr = list, error;
  if (tracked == nullptr) return op(object, list, bad_wr);
  Tracked* tracked_qp = qp != nullptr ? tracked : nullptr;
  if constexpr (std::is_same_v<Wr, ibv_send_wr>)
    run.checkers.send_posted(run, *tracked, list);
  else
    run.checkers.recv_posted(run, *tracked, list);
  std::vector<record::WrSummary>& wrs = run.posted_wrs;
  PostPlan plan = decide_post(run, *tracked, tracked_qp, verb, list, wrs);
  int result = 0;
  std::vector<record::WrSummary> fired_wrs;  // when the lock is released below
  if (plan.stop == SIZE_MAX && plan.force_signaled.empty() && plan.caused.empty()) {
    result = op(object, list, bad_wr);
  } else {
    fired_wrs = wrs;
    const bool real = !tracked->simulated;  // read under the lock
    lock.unlock();
    // Posts copy[from...] with the provider's op, or through the simulated
    // device with the conditions caused for those WRs.
    auto post = [&](Wr* first, Wr** bad, std::size_t from) {
      if constexpr (std::is_same_v<Wr, ibv_send_wr>) {
        if (!plan.caused.empty()) {
          std::vector<provider::SendFailure> failures;
          for (auto [index, failure] : plan.caused) {
            if (index < from) continue;
            failures.resize(std::max(failures.size(), index - from + 1),
                            provider::SendFailure::none);
            failures[index - from] = failure;
          }
          return provider::post_send_with_failures(qp, first, bad, failures);
        }
      }
      return op(object, first, bad);
    };
    result = execute_post(list, bad_wr, plan, post, qp, real);
    if (plan.cm_disconnect != nullptr) cm_faults::peer_gone(run, plan.cm_disconnect);
    lock.lock();
    if ((tracked = run.registry.find(object)) == nullptr) return result;
  }
  if (result == 0) hang::progressed();
  record::CallRecord posted(tracked->id());
  posted.add("call", to_string(verb))
      .add("wrs", std::span<const record::WrSummary>(fired_wrs.empty() ? wrs : fired_wrs))
      .add("ret", result);
  if (result != 0 && *bad_wr != nullptr) {
    std::size_t index = 0;
    for (Wr* wr = list; wr != nullptr && wr != *bad_wr; wr = wr->next) ++index;
    posted.add("bad_wr", index);
  }
  run.record(posted);
  return result;
}

// Each trampoline is a load, a branch and a tail call when the harness is
// off; the interposed body is a function of its own, so its frame is not
// set up on that path.
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  const FastPathOps* ops = saved_ops(qp->context);
  if (!g_active) [[likely]]
    return ops->post_send(qp, wr, bad_wr);
  thread_calls::verbs_point();
  return interpose_post(Verb::post_send, qp, qp, wr, bad_wr, ops->post_send);
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const FastPathOps* ops = saved_ops(qp->context);
  if (!g_active) [[likely]]
    return ops->post_recv(qp, wr, bad_wr);
  thread_calls::verbs_point();
  return interpose_post(Verb::post_recv, qp, qp, wr, bad_wr, ops->post_recv);
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const FastPathOps* ops = saved_ops(srq->context);
  if (!g_active) [[likely]]
    return ops->post_srq_recv(srq, wr, bad_wr);
  thread_calls::verbs_point();
  return interpose_post(Verb::post_srq_recv, srq, static_cast<ibv_qp*>(nullptr), wr, bad_wr,
                        ops->post_srq_recv);
}

// ---- poll_cq ---------------------------------------------------------------------------

// The poll record: its arguments, the count it returned and the completions.
void record_poll(Run& run, Tracked& cq, int num_entries, int ret,
                 const record::Completions& completions = {}) {
  record::CallRecord polled(cq.id());
  polled.add("call", "poll_cq").add("max", num_entries).add("ret", ret);
  if (completions.count > 0) polled.add("wc", completions);
  run.record(polled);
}

// One lock acquisition when no rule fires: the decisions, the provider's
// poll (which never blocks), the rewrites and the record happen under it.
[[gnu::noinline]] int interposed_poll_cq(const FastPathOps* ops, ibv_cq* cq, int num_entries,
                                         ibv_wc* wc) {
  Run& run = process_run();
  std::unique_lock lock(run.mutex);
  int error = 0;
  Tracked* tracked = enter(run, lock, cq, OnDeadDevice::work, error);
  if (error != 0) return -error;
  if (tracked == nullptr) return ops->poll_cq(cq, num_entries, wc);
  // The application looks at the CQ: a coalesced event is no longer owed.
  tracked->faults->absorb_next_event = false;
  if (tracked->faults->overflowed) {
    // Effect-level overflow on a real provider: only destroy works now.
    record_poll(run, *tracked, num_entries, -EIO);
    return -EIO;
  }
  // A poll for one completion cannot return fewer without returning none,
  // which is delayed_completion's business: partial_poll needs two or more.
  constexpr std::uint32_t kPollKinds = engine::FaultEngine::kinds_mask(
      {FaultKind::verb_failure, FaultKind::cq_overflow, FaultKind::partial_poll});
  constexpr std::uint32_t kPollOneKinds =
      engine::FaultEngine::kinds_mask({FaultKind::verb_failure, FaultKind::cq_overflow});
  std::optional<Decision> decision;
  if (run.engine.has_rules(Site::poll, num_entries >= 2 ? kPollKinds : kPollOneKinds)) {
    Opportunity at;
    at.site = Site::poll;
    at.object = tracked;
    at.verb = Verb::poll_cq;
    decision = num_entries >= 2
                   ? run.engine.decide(at, {FaultKind::verb_failure, FaultKind::cq_overflow,
                                              FaultKind::partial_poll})
                   : run.engine.decide(at, {FaultKind::verb_failure, FaultKind::cq_overflow});
  }
  int limit = num_entries;
  if (decision) {
    const Rule& rule = *decision->rule;
    if (rule.kind == FaultKind::verb_failure) {
      const std::string error = errno_name(*rule.error);
      run.engine.record_fault(*tracked, *decision, "effect", {{"errno", error}});
      record_poll(run, *tracked, num_entries, -*rule.error);
      return -*rule.error;
    }
    if (rule.kind == FaultKind::partial_poll) {
      // Fewer than asked for: 1 .. num_entries - 1, drawn from the seed.
      // Never none while completions wait: an application may take an
      // empty poll for an empty CQ (ibv_poll_cq(3)) and go to sleep.
      const std::uint64_t bits = engine::draw(run.engine.seed(), decision->rule_index,
                                              decision->object_key, decision->opportunity, 1);
      limit = 1 + static_cast<int>(bits % static_cast<std::uint64_t>(num_entries - 1));
      run.engine.record_fault(*tracked, *decision, "effect", {{"limit", limit}});
    }
    if (rule.kind == FaultKind::cq_overflow) {
      const inject::Target target{cq, cq->context, tracked->simulated};
      const Decision d = *decision;
      lock.unlock();
      const inject::Level level = inject::cq_overflow(run.engine, target);
      lock.lock();
      if ((tracked = run.registry.find(cq)) == nullptr) return ops->poll_cq(cq, num_entries, wc);
      run.engine.record_fault(*tracked, d, inject::to_string(level));
      if (tracked->faults->overflowed) {
        // The overflowing poll already fails, as on the simulated device.
        record_poll(run, *tracked, num_entries, -EIO);
        return -EIO;
      }
    }
  }
  engine::ObjectFaults& faults = *tracked->faults;
  bool may_poll = true;
  const int count = engine::take_due(faults, wc, limit, may_poll);
  int polled = 0;
  if (count < limit && may_poll) polled = ops->poll_cq(cq, limit - count, wc + count);
  // The simulated device may have waited for another process and given up
  // (sim/fabric/fabric_wait.h): the trace says where the wall clock decided.
  if (provider::timing_notes_pending()) [[unlikely]]
    run.record_timing_notes(tracked->id());
  if (polled < 0) {
    record_poll(run, *tracked, num_entries, polled);
    return count > 0 ? count : polled;
  }
  // Each completion's QP, looked up once: for the engine, the checks and
  // the record. An empty poll (a spin loop's usual one) has nothing to
  // look up or rewrite.
  record::Completions completions{};
  std::vector<ibv_qp*> to_error;
  int visible = 0;
  if (count + polled > 0) {
    completions = run.completions(wc, static_cast<std::size_t>(count + polled));
    visible = engine::apply_to_polled(run.engine, *tracked, wc, completions.qps, count,
                                      count + polled, to_error);
    completions.count = static_cast<std::size_t>(visible);
  }
  run.checkers.polled(run, *tracked, num_entries, completions);
  bool event_for_released = false;
  if (visible == 0) {
    run.trace.empty_poll(tracked->id(), num_entries);  // a spin loop: counted, one record
    hang::idle("ibv_poll_cq", tracked->ref);
    if (!faults.held.empty()) [[unlikely]]
      event_for_released = release_after_empty_poll(run, *tracked);
  } else {
    record_poll(run, *tracked, num_entries, visible, completions);
    hang::progressed();
  }
  if (to_error.empty() && !event_for_released) return visible;
  const bool simulated = tracked->simulated;
  lock.unlock();
  for (ibv_qp* qp : to_error) inject::qp_to_error(qp);
  if (event_for_released) (void)inject::spurious_cq_event(run.engine, cq, simulated);
  return visible;
}

// ---- req_notify_cq -------------------------------------------------------------------

// One lock acquisition when no rule fires (the provider's arm never blocks).
[[gnu::noinline]] int interposed_req_notify_cq(const FastPathOps* ops, ibv_cq* cq,
                                               int solicited_only) {
  Run& run = process_run();
  std::unique_lock lock(run.mutex);
  int error = 0;
  Tracked* tracked = enter(run, lock, cq, OnDeadDevice::fail, error);
  if (error != 0) return error;
  if (tracked == nullptr) return ops->req_notify_cq(cq, solicited_only);
  std::optional<Decision> decision;
  if (run.engine.has_rules(Site::arm)) {
    Opportunity at;
    at.site = Site::arm;
    at.object = tracked;
    at.verb = Verb::req_notify_cq;
    decision = run.engine.decide(at, {FaultKind::verb_failure, FaultKind::spurious_cq_event});
  }
  auto record_arm = [&](int ret) {
    run.record(record::CallRecord(tracked->id())
                     .add("call", "req_notify_cq")
                     .add("solicited", solicited_only != 0)
                     .add("ret", ret));
  };
  if (decision && decision->rule->kind == FaultKind::verb_failure) {
    const int error = *decision->rule->error;
    const std::string name = errno_name(error);
    run.engine.record_fault(*tracked, *decision, "effect", {{"errno", name}});
    record_arm(error);
    return error;
  }
  const int result = ops->req_notify_cq(cq, solicited_only);
  if (result == 0) {
    tracked->faults->armed = true;
    tracked->faults->provider_arm_spent = false;  // the provider's arm is the application's again
    run.checkers.armed(run, *tracked);
  }
  if (decision) {
    // A spurious event on a real provider is queued by the interposer
    // itself, under its lock: released meanwhile.
    const bool simulated = tracked->simulated;
    lock.unlock();
    inject::Level level = inject::Level::unsupported;
    if (result == 0) level = inject::spurious_cq_event(run.engine, cq, simulated);
    lock.lock();
    if ((tracked = run.registry.find(cq)) == nullptr) return result;
    run.engine.record_fault(*tracked, *decision, inject::to_string(level));
  }
  record_arm(result);
  return result;
}

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  const FastPathOps* ops = saved_ops(cq->context);
  if (!g_active) [[likely]]
    return ops->poll_cq(cq, num_entries, wc);
  thread_calls::verbs_point();
  const int polled = interposed_poll_cq(ops, cq, num_entries, wc);
  thread_calls::polled(polled == 0);
  return polled;
}

int req_notify_cq(ibv_cq* cq, int solicited_only) {
  const FastPathOps* ops = saved_ops(cq->context);
  if (!g_active) [[likely]]
    return ops->req_notify_cq(cq, solicited_only);
  thread_calls::verbs_point();
  return interposed_req_notify_cq(ops, cq, solicited_only);
}

// ---- query_port ----------------------------------------------------------------------

// A port the interposer took down on a real provider reads as down.
int query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr, size_t attr_len) {
  const FastPathOps* ops = saved_ops(context);
  const int result = ops->query_port(context, port, attr, attr_len);
  if (result == 0 && g_active) adjust_port_attr(process_run(), context, port, attr);
  return result;
}

}  // namespace

void install_all_trampolines() {
  // Each op is one aligned pointer store: a thread polling meanwhile calls
  // the provider's op or the trampoline, either of them whole.
  for (saved::Slot& slot : saved::slots)
    if (const ibv_context* context = slot.context.load(std::memory_order_acquire);
        saved::published(context))
      install_trampolines(const_cast<ibv_context*>(context));
}

void install_trampolines(ibv_context* context) {
  if (verbs_context* vctx = verbs_get_ctx_op(context, query_port)) vctx->query_port = query_port;
  if (verbs_context* vctx = verbs_get_ctx_op(context, create_cq_ex))
    vctx->create_cq_ex = interposer::create_cq_ex;
  if (verbs_context* vctx = verbs_get_ctx_op(context, create_qp_ex))
    vctx->create_qp_ex = interposer::create_qp_ex;
  context->ops.poll_cq = poll_cq;
  context->ops.req_notify_cq = req_notify_cq;
  context->ops.post_send = post_send;
  context->ops.post_recv = post_recv;
  context->ops.post_srq_recv = post_srq_recv;
}

}  // namespace verbfault::interposer

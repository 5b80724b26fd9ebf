// rapidcheck generators for fault plans, for users' own properties
// (header-only; needs rapidcheck):
//
//   RC_GTEST_PROP(MyLib, SurvivesAnyPlan, (verbfault::Plan plan)) {
//     verbfault::Session session(plan, *rc::gen::arbitrary<std::uint64_t>());
//     RC_ASSERT(run_my_rdma_code() == kOk);
//   }
//
// Every generated rule is valid (verbfault::validate accepts it), and a
// failing plan shrinks: fewer rules, simpler kinds, no selector fields, the
// first opportunity. Some rules name a process (proc=, an index below 4 or
// a name). Object indexes stay below 4 (the objects a small test
// creates); probabilities are multiples of 1/16.
#pragma once

#include "verbfault/plan.h"

#include <rapidcheck.h>

#include <cerrno>
#include <ostream>

namespace verbfault {

// How rapidcheck shows a plan in a counterexample: its one-line rules.
inline void showValue(const Plan& plan, std::ostream& os) {
  os << "Plan{";
  for (std::size_t i = 0; i < plan.rules.size(); ++i)
    os << (i ? "; " : "") << to_cli(plan.rules[i]);
  os << "}";
}
inline void showValue(const Rule& rule, std::ostream& os) {
  os << to_cli(rule);
}

}  // namespace verbfault

namespace rc {

template <>
struct Arbitrary<verbfault::Trigger> {
  static Gen<verbfault::Trigger> arbitrary() {
    using verbfault::Trigger;
    return gen::oneOf(
        gen::just(Trigger{}),
        gen::map(gen::inRange<std::uint64_t>(1, 9),
                 [](std::uint64_t n) {
                   return Trigger{Trigger::Kind::nth, n, 0, 0, 0};
                 }),
        gen::map(gen::inRange<std::uint64_t>(1, 9),
                 [](std::uint64_t n) {
                   return Trigger{Trigger::Kind::every, n, 0, 0, 0};
                 }),
        gen::map(gen::pair(gen::inRange<std::uint64_t>(1, 6), gen::inRange<std::uint64_t>(1, 6)),
                 [](std::pair<std::uint64_t, std::uint64_t> w) {
                   return Trigger{Trigger::Kind::window, 0, w.first, w.first + w.second, 0};
                 }),
        gen::map(gen::inRange(1, 17), [](int sixteenths) {
          return Trigger{Trigger::Kind::probability, 0, 0, 0, sixteenths / 16.0};
        }));
  }
};

template <>
struct Arbitrary<verbfault::Rule> {
  static Gen<verbfault::Rule> arbitrary() {
    using namespace verbfault;
    return gen::exec([] {
      Rule rule;
      rule.kind = *gen::element(
          FaultKind::flush, FaultKind::completion_error, FaultKind::rnr_retry_exhausted,
          FaultKind::retry_exhausted, FaultKind::partial_poll, FaultKind::delayed_completion,
          FaultKind::spurious_cq_event, FaultKind::coalesce_cq_event, FaultKind::drop_cq_event,
          FaultKind::cq_overflow, FaultKind::verb_failure, FaultKind::async_event,
          FaultKind::port_down, FaultKind::device_fatal);
      switch (rule.kind) {
        case FaultKind::completion_error:
          rule.status =
              *gen::element(IBV_WC_REM_ACCESS_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_LEN_ERR,
                            IBV_WC_REM_INV_REQ_ERR, IBV_WC_GENERAL_ERR);
          break;
        case FaultKind::delayed_completion:
          rule.polls = *gen::inRange<std::uint32_t>(1, 5);
          break;
        case FaultKind::verb_failure:
          rule.verb = *gen::element(Verb::post_send, Verb::post_recv, Verb::req_notify_cq,
                                    Verb::poll_cq, Verb::create_qp, Verb::modify_qp);
          rule.error = *gen::element(ENOMEM, EINVAL, EAGAIN);
          break;
        case FaultKind::async_event:
          rule.event = *gen::element(IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR,
                                     IBV_EVENT_QP_ACCESS_ERR, IBV_EVENT_PATH_MIG_ERR);
          break;
        case FaultKind::port_down:
          rule.port = 1;
          break;
        default:
          break;
      }
      // Selector fields that fit the kind's opportunities: an object of the
      // kind it counts on, sometimes.
      const bool on_cq =
          rule.kind == FaultKind::cq_overflow || rule.kind == FaultKind::partial_poll ||
          rule.kind == FaultKind::delayed_completion || rule.kind == FaultKind::spurious_cq_event ||
          rule.kind == FaultKind::coalesce_cq_event || rule.kind == FaultKind::drop_cq_event;
      if (*gen::element(false, true))
        rule.selector.object =
            ObjectRef{on_cq ? ObjectKind::cq : ObjectKind::qp, *gen::inRange<std::uint32_t>(0, 4)};
      // Now and then a rule for one process of a multi-process run: an
      // index, or a name. In any other process the rule is inactive,
      // which a property must survive too.
      if (*gen::element(false, false, false, true))
        rule.selector.proc =
            *gen::oneOf(gen::map(gen::inRange<std::uint32_t>(0, 4),
                                 [](std::uint32_t index) {
                                   return ProcessRef{index, {}};
                                 }),
                        gen::map(gen::element<std::string>("server", "client", "ib_write_bw"),
                                 [](std::string name) {
                                   return ProcessRef{std::nullopt, std::move(name)};
                                 }));
      rule.trigger = *gen::arbitrary<Trigger>();
      if (*gen::element(false, true)) rule.count = *gen::inRange<std::uint64_t>(1, 4);
      return rule;
    });
  }
};

template <>
struct Arbitrary<verbfault::Plan> {
  static Gen<verbfault::Plan> arbitrary() {
    return gen::map(gen::container<std::vector<verbfault::Rule>>(gen::arbitrary<verbfault::Rule>()),
                    [](std::vector<verbfault::Rule> rules) {
                      if (rules.size() > 4) rules.resize(4);  // a handful is enough to matter
                      return verbfault::Plan{std::move(rules)};
                    });
  }
};

}  // namespace rc

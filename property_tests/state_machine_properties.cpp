// State-machine properties (rc::state) of the simulated device under the
// interposer, where the generated command sequence includes the faults, so
// that a failure shrinks to a short schedule:
//
// * polling and error propagation: whatever mix of posts, polls, partial
//   polls, delayed completions, injected completion errors and fatal QP
//   errors, every completion is of a posted WR, in per-queue order, once;
//   after a QP's first error completion all its later completions are
//   errors; and once both QPs are moved to ERR and drained, every WR that
//   owed a completion has had exactly one.
// * ack counting: events taken never exceed the arms that could fire, and
//   ibv_destroy_cq succeeds exactly when the acks equal the events taken.
// * determinism: for any plan, the same seed gives the same trace.
//
// Run with RC_PARAMS="max_success=2000" for a longer local run.
#include "verbs_fixture.h"
#include "verbfault/fabric.h"
#include "verbfault/rapidcheck.h"
#include "verbfault/session.h"

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <fcntl.h>

#include <deque>
#include <map>
#include <memory>
#include <string>

namespace verbfault::testing {
namespace {

// The system under test: a connected RC pair a -> b on vfsim0, each QP
// with its own CQ on one channel, inside a Session.
class Pair : public RcPair {
 public:
  void TestBody() override {}
  void open(ibv_comp_channel** channel) {
    SimDevice::SetUp();
    *channel = ibv_create_comp_channel(ctx_);
    build_pair(*channel, nullptr, nullptr);
  }
  void close() { SimDevice::TearDown(); }
  using RcPair::a_;
  using RcPair::b_;
  using RcPair::buf_a_;
  using RcPair::buf_b_;
  using RcPair::cq_a_;
  using RcPair::cq_b_;
  using RcPair::mr_a_;
  using RcPair::mr_b_;
  using SimDevice::ctx_;
};

// ---- polling and error propagation ---------------------------------------------------

struct PostedWr {
  std::uint64_t wr_id;
  bool owes_completion;  // signaled send, or any receive
};

struct Traffic {
  std::unique_ptr<Session> session;
  Pair pair;
  ibv_comp_channel* channel = nullptr;
  std::uint64_t next_id = 1;
  // What each work queue still owes, oldest first.
  std::deque<PostedWr> sends;  // a's send queue
  std::deque<PostedWr> recvs;  // b's receive queue
  bool a_in_error = false;     // an error completion of a was polled
  bool b_in_error = false;

  // Checks one polled completion against what was posted (RC_ASSERT).
  void account(const ibv_wc& wc, bool of_a) {
    std::deque<PostedWr>& queue = of_a ? sends : recvs;
    bool& in_error = of_a ? a_in_error : b_in_error;
    // Unsignaled sends ahead of it completed silently (a send slot is
    // reclaimed by a later completion of the same queue).
    while (!queue.empty() && queue.front().wr_id != wc.wr_id && !queue.front().owes_completion)
      queue.pop_front();
    RC_ASSERT(!queue.empty());                   // never more completions than posted
    RC_ASSERT(queue.front().wr_id == wc.wr_id);  // in per-queue order
    RC_ASSERT(queue.front().owes_completion || wc.status != IBV_WC_SUCCESS);
    queue.pop_front();
    if (in_error) RC_ASSERT(wc.status != IBV_WC_SUCCESS);  // no error turns into success
    if (wc.status != IBV_WC_SUCCESS) in_error = true;
  }

  int poll(bool of_a, int max) {
    ibv_wc wc[8];
    const int n = ibv_poll_cq(of_a ? pair.cq_a_ : pair.cq_b_, max, wc);
    RC_ASSERT(n >= 0);
    RC_ASSERT(n <= max);
    for (int i = 0; i < n; ++i) account(wc[i], of_a);
    return n;
  }
};

struct TrafficModel {
  bool a_fatal = false;
  bool b_fatal = false;
};

using TrafficCommand = rc::state::Command<TrafficModel, Traffic>;

// A receive on b, then a SEND from a that consumes it.
struct PostPair : TrafficCommand {
  bool signaled = *rc::gen::arbitrary<bool>();
  void run(const TrafficModel&, Traffic& t) const override {
    const std::uint64_t recv_id = t.next_id++, send_id = t.next_id++;
    ibv_sge sge{reinterpret_cast<uintptr_t>(t.pair.buf_b_), 64, t.pair.mr_b_->lkey};
    ibv_recv_wr recv{};
    recv.wr_id = recv_id;
    recv.sg_list = &sge;
    recv.num_sge = 1;
    ibv_recv_wr* bad_recv = nullptr;
    // Both queues hold 16; a slot comes back when its completion is polled,
    // so a full queue (ENOMEM) is a legal answer.
    const int posted = ibv_post_recv(t.pair.b_, &recv, &bad_recv);
    RC_ASSERT(posted == 0 || posted == ENOMEM);
    if (posted != 0) return;
    t.recvs.push_back({recv_id, true});
    ibv_sge payload{reinterpret_cast<uintptr_t>(t.pair.buf_a_), 16, t.pair.mr_a_->lkey};
    ibv_send_wr send{};
    send.wr_id = send_id;
    send.sg_list = &payload;
    send.num_sge = 1;
    send.opcode = IBV_WR_SEND;
    send.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    ibv_send_wr* bad_send = nullptr;
    const int rc = ibv_post_send(t.pair.a_, &send, &bad_send);
    RC_ASSERT(rc == 0 || rc == ENOMEM);
    if (rc == 0) t.sends.push_back({send_id, signaled});
  }
  void show(std::ostream& os) const override {
    os << "PostPair(" << (signaled ? "signaled" : "unsignaled") << ")";
  }
};

struct Poll : TrafficCommand {
  bool of_a = *rc::gen::arbitrary<bool>();
  int max = *rc::gen::inRange(1, 9);
  void run(const TrafficModel&, Traffic& t) const override { t.poll(of_a, max); }
  void show(std::ostream& os) const override {
    os << "Poll(" << (of_a ? "a" : "b") << ", " << max << ")";
  }
};

// A fatal error on a QP (cause level: the device moves it to ERR and
// flushes), as IBV_EVENT_QP_FATAL reports.
struct QpFatal : TrafficCommand {
  bool of_a = *rc::gen::arbitrary<bool>();
  void checkPreconditions(const TrafficModel& m) const override {
    RC_PRE(!(of_a ? m.a_fatal : m.b_fatal));
  }
  void apply(TrafficModel& m) const override { (of_a ? m.a_fatal : m.b_fatal) = true; }
  void run(const TrafficModel&, Traffic& t) const override {
    RC_ASSERT(fabric::raise_event(of_a ? t.pair.a_ : t.pair.b_, IBV_EVENT_QP_FATAL) == 0);
  }
  void show(std::ostream& os) const override { os << "QpFatal(" << (of_a ? "a" : "b") << ")"; }
};

// Both QPs to ERR, then everything drained: every WR that owed a
// completion has had exactly one.
void settle(Traffic& t) {
  ibv_qp_attr err{};
  err.qp_state = IBV_QPS_ERR;
  RC_ASSERT(ibv_modify_qp(t.pair.a_, &err, IBV_QP_STATE) == 0);
  RC_ASSERT(ibv_modify_qp(t.pair.b_, &err, IBV_QP_STATE) == 0);
  // Empty polls move the virtual clock and count down delayed completions.
  for (int i = 0; i < 64; ++i) {
    t.poll(true, 8);
    t.poll(false, 8);
  }
  for (const PostedWr& wr : t.sends) RC_ASSERT(!wr.owes_completion);
  RC_ASSERT(t.recvs.empty());
}

// The async events of the QP_FATAL commands, acknowledged so that the QPs
// can be destroyed.
void ack_async_events(ibv_context* ctx) {
  const int flags = fcntl(ctx->async_fd, F_GETFL);
  fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
  ibv_async_event event;
  while (ibv_get_async_event(ctx, &event) == 0) ibv_ack_async_event(&event);
}

rc::Gen<Plan> traffic_plans() {
  // Polling faults on the two CQs and injected errors on a's sends.
  return rc::gen::exec([] {
    Plan plan;
    if (*rc::gen::arbitrary<bool>())
      plan.rules.push_back(
          parse_rule("partial_poll p=0." + std::to_string(*rc::gen::inRange(1, 10))));
    if (*rc::gen::arbitrary<bool>())
      plan.rules.push_back(parse_rule("delayed_completion(" +
                                      std::to_string(*rc::gen::inRange(1, 4)) + ") p=0." +
                                      std::to_string(*rc::gen::inRange(1, 4))));
    if (*rc::gen::arbitrary<bool>())
      plan.rules.push_back(parse_rule("completion_error(rem_access_err) qp#0 side=send nth=" +
                                      std::to_string(*rc::gen::inRange(1, 8))));
    return plan;
  });
}

RC_GTEST_PROP(StateMachine, EveryWorkRequestCompletesOnceInOrderAndErrorsStick, ()) {
  const Plan plan = *traffic_plans();
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  Traffic traffic;
  traffic.session = std::make_unique<Session>(plan, seed);
  traffic.pair.open(&traffic.channel);
  RC_ASSERT(traffic.pair.a_ != nullptr && traffic.pair.b_ != nullptr);
  TrafficModel model;
  rc::state::check(model, traffic,
                   rc::state::gen::execOneOfWithArgs<PostPair, PostPair, Poll, Poll, QpFatal>());
  settle(traffic);
  ack_async_events(traffic.pair.ctx_);
  traffic.pair.close();
}

// ---- ack counting ----------------------------------------------------------------------

struct Events {
  std::unique_ptr<Session> session;
  Pair pair;
  ibv_comp_channel* channel = nullptr;
  std::uint64_t arms = 0;
  std::uint64_t taken = 0;
  std::uint64_t acked = 0;
  std::uint64_t spurious = 0;  // events the plan injects
};

struct EventsModel {};
using EventsCommand = rc::state::Command<EventsModel, Events>;

struct Arm : EventsCommand {
  void run(const EventsModel&, Events& e) const override {
    RC_ASSERT(ibv_req_notify_cq(e.pair.cq_a_, 0) == 0);
    ++e.arms;
  }
  void show(std::ostream& os) const override { os << "Arm"; }
};

struct Write : EventsCommand {
  void run(const EventsModel&, Events& e) const override {
    ibv_sge sge{reinterpret_cast<uintptr_t>(e.pair.buf_a_), 8, e.pair.mr_a_->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(e.pair.buf_b_);
    wr.wr.rdma.rkey = e.pair.mr_b_->rkey;
    ibv_send_wr* bad = nullptr;
    const int rc = ibv_post_send(e.pair.a_, &wr, &bad);
    RC_ASSERT(rc == 0 || rc == ENOMEM);
    ibv_wc wc[4];
    while (ibv_poll_cq(e.pair.cq_a_, 4, wc) > 0) {
    }
  }
  void show(std::ostream& os) const override { os << "Write"; }
};

struct TakeEvent : EventsCommand {
  void run(const EventsModel&, Events& e) const override {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(e.channel, &cq, &context) != 0) return;  // none pending (O_NONBLOCK)
    RC_ASSERT(cq == e.pair.cq_a_);
    ++e.taken;
    // Every event consumed an arm (a spurious one too: it answers an arm).
    RC_ASSERT(e.taken <= e.arms);
  }
  void show(std::ostream& os) const override { os << "TakeEvent"; }
};

struct Ack : EventsCommand {
  unsigned count = *rc::gen::inRange(1u, 3u);
  void run(const EventsModel&, Events& e) const override {
    ibv_ack_cq_events(e.pair.cq_a_, count);
    e.acked += count;
  }
  void show(std::ostream& os) const override { os << "Ack(" << count << ")"; }
};

RC_GTEST_PROP(StateMachine, DestroyCqSucceedsExactlyWhenAcksEqualEvents, ()) {
  Events events;
  const bool spurious = *rc::gen::arbitrary<bool>();
  events.session =
      std::make_unique<Session>(spurious ? parse_rules("spurious_cq_event cq#0 p=0.5") : Plan{},
                                *rc::gen::arbitrary<std::uint64_t>());
  events.pair.open(&events.channel);
  const int flags = fcntl(events.channel->fd, F_GETFL);
  fcntl(events.channel->fd, F_SETFL, flags | O_NONBLOCK);
  EventsModel model;
  rc::state::check(model, events, rc::state::gen::execOneOfWithArgs<Arm, Write, TakeEvent, Ack>());
  RC_ASSERT(ibv_destroy_qp(events.pair.a_) == 0);
  const int result = ibv_destroy_cq(events.pair.cq_a_);
  RC_ASSERT((result == 0) == (events.acked == events.taken));
  if (result != 0) {
    RC_ASSERT(result == EBUSY);
    // Diagnosed and refused: the CQ is still there, and the session says so.
    bool found = false;
    for (const Finding& f : events.session->findings())
      found = found || f.check == "ack.cq_events_unacked_at_destroy" ||
              f.check == "ack.cq_events_overacked";
    RC_ASSERT(found);
  } else {
    events.pair.cq_a_ = nullptr;
  }
  events.pair.close();
}

// ---- determinism -----------------------------------------------------------------------

// A fixed workload under `plan`, in plain verbs: any call may fail (the
// plan may fail verbs or kill the device), and nothing blocks, so that any
// plan ends.
std::vector<std::string> workload_trace(const Plan& plan, std::uint64_t seed) {
  Session session(plan, seed);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* ctx = n > 0 ? ibv_open_device(list[0]) : nullptr;
  ibv_free_device_list(list);
  if (ctx == nullptr) return session.trace();
  alignas(64) static char buffer[4096];
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ibv_mr* mr =
      pd ? ibv_reg_mr(pd, buffer, sizeof buffer, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
         : nullptr;
  ibv_qp* qps[2] = {nullptr, nullptr};
  for (ibv_qp*& qp : qps) {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 16;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    qp = pd && cq ? ibv_create_qp(pd, &init) : nullptr;
  }
  if (qps[0] && qps[1] && mr) {
    ibv_port_attr port{};
    (void)ibv_query_port(ctx, 1, &port);
    for (int i = 0; i < 2; ++i)
      (void)rc_connect(qps[i], {.dest_qp_num = qps[1 - i]->qp_num, .dlid = port.lid});
    for (std::uint64_t i = 0; i < 6; ++i) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(buffer + 1024), 64, mr->lkey};
      ibv_recv_wr recv{};
      recv.wr_id = 100 + i;
      recv.sg_list = &sge;
      recv.num_sge = 1;
      ibv_recv_wr* bad_recv = nullptr;
      (void)ibv_post_recv(qps[1], &recv, &bad_recv);
      ibv_sge payload{reinterpret_cast<uintptr_t>(buffer), 8, mr->lkey};
      ibv_send_wr send{};
      send.wr_id = i;
      send.sg_list = &payload;
      send.num_sge = 1;
      send.opcode = IBV_WR_SEND;
      send.send_flags = IBV_SEND_SIGNALED;
      ibv_send_wr* bad = nullptr;
      (void)ibv_post_send(qps[0], &send, &bad);
      ibv_wc wc[4];
      for (int p = 0; p < 4; ++p) (void)ibv_poll_cq(cq, 4, wc);
    }
  }
  std::vector<std::string> trace = session.trace();
  ibv_close_device(ctx);  // frees whatever is left
  return trace;
}

RC_GTEST_PROP(StateMachine, TheSameSeedGivesTheSameTraceForAnyPlan, (Plan plan)) {
  // A port taken down or a dead device stays so for the rest of the process,
  // as on a real machine: the two runs here would not start alike.
  for (const Rule& rule : plan.rules)
    RC_PRE(rule.kind != FaultKind::port_down && rule.kind != FaultKind::device_fatal);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  RC_ASSERT(workload_trace(plan, seed) == workload_trace(plan, seed));
}

}  // namespace
}  // namespace verbfault::testing

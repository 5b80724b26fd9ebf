// A fault plan: which faults to inject, where and when.
//
// A plan is a list of rules; a rule = fault kind (+ its parameters) +
// selector (which objects and work requests) + trigger (which of the
// matching opportunities) + count (at most how many times per object).
// Plans are written as YAML files (parse_plan_yaml / to_yaml) or one rule
// per line in the CLI form (parse_rule / to_cli); both round-trip:
// parse -> write -> parse gives an equal plan. The formats are documented
// in docs/fault-kinds.md ("Fault plans").
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault {

// What is injected. Each kind counts its own opportunities (see docs/fault-kinds.md):
// e.g. completion_error counts matching posted work requests, partial_poll
// counts poll_cq calls, spurious_cq_event counts req_notify_cq calls.
enum class FaultKind : std::uint8_t {
  cq_overflow,
  flush,
  rnr_retry_exhausted,
  retry_exhausted,
  completion_error,
  spurious_cq_event,
  drop_cq_event,
  coalesce_cq_event,
  async_event,
  verb_failure,
  delayed_completion,
  partial_poll,
  port_down,
  device_fatal,
  // The connection manager's (rdma_cm) failures, on an id (cm_id#N): each
  // counts the commands or events of the step it breaks (docs/fault-kinds.md "Fault
  // plans"): rdma_resolve_addr, rdma_resolve_route, rdma_connect, or the
  // CONNECT_RESPONSE / DISCONNECTED / TIMEWAIT_EXIT events the id is about
  // to report.
  cm_addr_error,
  cm_route_error,
  cm_unreachable,
  cm_reject,
  // rdma_connect's answer (the REP, CONNECT_RESPONSE) arrives and the QP
  // cannot take it: counts the CONNECT_RESPONSE events of an id with a QP.
  cm_connect_error,
  cm_lost_disconnect,
  cm_timewait_exit_missing,
  cm_delay,
  // The device an id is on is removed (hot unplug): counts the events the
  // id is about to report, of any type.
  cm_device_removal,
  // The peer of a connection made through the CM disappears: counts the
  // work requests posted on the connection's QP (docs/fault-kinds.md "Fault plans").
  cm_disconnect,
  // The address of the netdev an id is bound to changes (a bond's failover
  // to another slave): counts the events the id is about to report.
  cm_addr_change,
};
// The enumerator added last: a new kind goes after it and becomes it.
inline constexpr FaultKind kLastFaultKind = FaultKind::cm_addr_change;

// Whether `kind` is one of the connection manager's (cm_*): decided on CM
// ids, not on verbs objects.
constexpr bool is_cm_fault(FaultKind kind) {
  return kind >= FaultKind::cm_addr_error;
}

// Object types a selector can name by creation index ("qp#2" is the third
// QP the process created). Indexes count per type from 0 in creation order.
// `thread` names a thread of the scheduler in the trace ("thread#0" is the
// main thread); no fault selects a thread. `cm_id` is an rdma_cm id
// (rdma_create_id, or a listener's child made by a connect request), in the
// order the process's connection manager made them.
enum class ObjectKind : std::uint8_t { context, pd, mr, cq, srq, qp, ah, channel, thread, cm_id };

struct ObjectRef {
  ObjectKind kind;
  std::uint32_t index;
  bool operator==(const ObjectRef&) const = default;
};

enum class Side : std::uint8_t { send, recv };

// A process of a multi-process run (`proc=`): its member index
// (VERBFAULT_PROC, 0..kMaxProcessIndex) or the basename of its argv[0]
// ("ib_write_bw"). Exactly one of the two is set.
inline constexpr std::uint32_t kMaxProcessIndex = 63;
struct ProcessRef {
  std::optional<std::uint32_t> index;
  std::string name;  // when index is unset
  bool operator==(const ProcessRef&) const = default;
};

// Work request / completion operations, named as in the plan files.
enum class Opcode : std::uint8_t {
  send,
  send_with_imm,
  rdma_write,
  rdma_write_with_imm,
  rdma_read,
  atomic_cmp_and_swp,
  atomic_fetch_and_add,
  recv,
  recv_rdma_with_imm,
};

// The connection manager's events (enum rdma_cm_event_type, in its order:
// the numbers are the ucma ABI's), named in plans as rdma_event_str(3)
// names them without RDMA_CM_EVENT_, in lower case.
enum class CmEvent : std::uint8_t {
  addr_resolved,
  addr_error,
  route_resolved,
  route_error,
  connect_request,
  connect_response,
  connect_error,
  unreachable,
  rejected,
  established,
  disconnected,
  device_removal,
  multicast_join,
  multicast_error,
  addr_change,
  timewait_exit,
};

// Verbs a verb_failure rule can make fail.
enum class Verb : std::uint8_t {
  alloc_pd,
  reg_mr,
  create_cq,
  resize_cq,
  create_comp_channel,
  create_srq,
  modify_srq,
  create_qp,
  modify_qp,
  create_ah,
  post_send,
  post_recv,
  post_srq_recv,
  req_notify_cq,
  poll_cq,
};

// Which work requests, completions or objects a rule applies to. Every
// field that is set must match; an empty selector matches everything.
struct Selector {
  std::optional<ObjectRef> object;
  std::optional<ibv_qp_type> qp_type;  // IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD
  std::optional<Opcode> opcode;
  std::optional<Side> side;
  // Matches when (wr_id & wr_id_mask) == *wr_id.
  std::optional<std::uint64_t> wr_id;
  std::uint64_t wr_id_mask = ~std::uint64_t{0};
  // The rule is for that process only; in every other one it never fires
  // (and keeps its index in the plan, so rule numbers agree across them).
  std::optional<ProcessRef> proc;
  bool operator==(const Selector&) const = default;
};

// Which opportunities fire. Opportunities are numbered from 1 per
// (rule, object).
struct Trigger {
  enum class Kind : std::uint8_t { always, nth, every, window, probability };
  Kind kind = Kind::always;
  std::uint64_t n = 0;     // nth: opportunity n; every: n, 2n, 3n, ...
  std::uint64_t from = 0;  // window: opportunities from <= k < to
  std::uint64_t to = 0;
  double probability = 0;  // probability: each opportunity, independently
  bool operator==(const Trigger&) const = default;
};

struct Rule {
  FaultKind kind = FaultKind::flush;
  Selector selector;
  Trigger trigger;
  // Fires at most this many times per selected object (unbounded if unset).
  std::optional<std::uint64_t> count;

  // Kind parameters; exactly those of the kind are set after parsing.
  std::optional<ibv_wc_status> status;    // completion_error
  std::optional<ibv_event_type> event;    // async_event
  std::optional<Verb> verb;               // verb_failure
  std::optional<int> error;               // verb_failure: the errno, e.g. ENOMEM
  std::optional<std::uint32_t> polls;     // delayed_completion
  std::optional<std::uint8_t> port;       // port_down (default 1)
  std::optional<CmEvent> cm_event;        // cm_delay: the event held back...
  std::optional<std::uint32_t> delay_ms;  // ...for this long (virtual time)

  std::string name;  // optional label used in reports and coverage
  bool operator==(const Rule&) const = default;
};

struct Plan {
  std::vector<Rule> rules;
  bool operator==(const Plan&) const = default;
};

// A plan or rule that cannot be read. what() is one line:
// "<source>:<line>: <what was found>: expected <what was expected>";
// control characters of the input it quotes are written as \n, \t, \xNN.
class PlanError : public std::runtime_error {
 public:
  explicit PlanError(const std::string& message);
};

// YAML plan file (see docs/fault-kinds.md "Fault plans").
Plan parse_plan_file(const std::string& path);
Plan parse_plan_yaml(std::string_view text, std::string_view source = "<plan>");
std::string to_yaml(const Plan& plan);

// One-line CLI form of a rule, e.g.
//   "completion_error(rem_access_err) qp#1 opcode=send nth=3 count=1".
// Several rules in one string are separated by ';' (parse_rules).
Rule parse_rule(std::string_view text, std::string_view source = "<rule>");
Plan parse_rules(std::string_view text, std::string_view source = "<rules>");
std::string to_cli(const Rule& rule);

// Names as they appear in plans.
std::string_view to_string(FaultKind kind);
std::string_view to_string(ObjectKind kind);
std::string_view to_string(Opcode opcode);
std::string_view to_string(Verb verb);
std::string to_string(const ObjectRef& ref);       // "qp#2"
std::string to_string(const ProcessRef& ref);      // "1", "ib_write_bw"
std::string_view to_string(ibv_wc_status status);  // "rem_access_err" ("success" too)
std::string_view to_string(ibv_event_type event);  // "qp_fatal"
std::string_view to_string(CmEvent event);         // "established"
std::string errno_name(int error);                 // "ENOMEM", or the number

// A run's seed: a 64-bit unsigned number, decimal or 0x hex, the whole
// text. Throws PlanError "<source>='<text>': expected a 64-bit unsigned
// seed (decimal or 0x hex)". The one parser of the CLI and the
// environment (VERBFAULT_SEED).
std::uint64_t parse_seed(std::string_view text, std::string_view source);

// Checks the rule's parameters against its kind (the parsers call it; the
// rapidcheck generators and the session API use it too). Throws PlanError.
void validate(const Rule& rule, std::string_view source = "<rule>");

}  // namespace verbfault

// QPs with the ibv_wr_* post API (ibv_create_qp_ex(3), ibv_wr_post(3)):
// ibv_create_qp_ex is inline in verbs.h and jumps through the
// verbs_context, and the builders are function pointers in the ibv_qp_ex,
// so neither reaches ibv_post_send. The interposer replaces the
// create_qp_ex op and, under a plan, the QP's wr_start / builders /
// wr_complete / wr_abort with trampolines. Each builder call is one posted
// WR opportunity, decided like a WR of ibv_post_send (post_decisions.h);
// ibv_wr_complete then applies the batch's plan: a verb_failure fails the
// whole batch (the API posts all or nothing), a flush moves the QP to ERR
// first (the whole batch is flushed), a doomed WR is forced signaled at
// its builder and becomes its error when polled.
#include "extended_qp_trampolines.h"
#include "cm_faults.h"

#include "hang_watchdog.h"
#include "injections.h"
#include "verbs.h"
#include "opcodes.h"
#include "post_decisions.h"
#include "saved_ops.h"
#include "run.h"

#include <cerrno>
#include <memory>
#include <type_traits>
#include <unordered_map>

namespace verbfault::interposer {

namespace {

// The interposer's view of one ibv_qp_ex. Guarded by the interposer lock.
struct ExtendedQp {
  ibv_qp_ex provider{};  // the provider's functions, before the trampolines
  PostPlan plan;         // the batch since ibv_wr_start
  std::vector<record::WrSummary> wrs;
  std::size_t built = 0;          // WRs built in the batch
  std::size_t doomed_before = 0;  // the QP's doomed list at ibv_wr_start
};

// Keyed by the QP; an entry is replaced when a QP is created at the same
// address, and only a QP whose trampolines were installed looks it up.
std::unordered_map<const ibv_qp*, std::unique_ptr<ExtendedQp>>& extended_qps() {
  static auto* qps = new std::unordered_map<const ibv_qp*, std::unique_ptr<ExtendedQp>>();
  return *qps;
}

ExtendedQp* find(ibv_qp_ex* qpx) {
  auto it = extended_qps().find(&qpx->qp_base);
  return it == extended_qps().end() ? nullptr : it->second.get();
}

void start(ibv_qp_ex* qpx) {
  Run& run = process_run();
  decltype(ibv_qp_ex::wr_start) original = nullptr;
  {
    std::lock_guard lock(run.mutex);
    ExtendedQp* ex = find(qpx);
    if (ex == nullptr) return;
    ex->plan = PostPlan{};
    ex->wrs.clear();
    ex->built = 0;
    Tracked* qp = run.registry.find(&qpx->qp_base);
    ex->doomed_before = qp != nullptr ? qp->faults->doomed.size() : 0;
    original = ex->provider.wr_start;
  }
  original(qpx);
}

// One builder call: decides the WR it starts (lock held inside), forces it
// signaled when doomed, then runs the provider's builder.
template <auto Builder, Opcode kOpcode, class... Args>
void build(ibv_qp_ex* qpx, Args... args) {
  Run& run = process_run();
  std::remove_cvref_t<decltype(ibv_qp_ex{}.*Builder)> original = nullptr;
  bool force_signaled = false;
  {
    std::lock_guard lock(run.mutex);
    ExtendedQp* ex = find(qpx);
    if (ex == nullptr) return;
    original = ex->provider.*Builder;
    Tracked* qp = run.registry.find(&qpx->qp_base);
    const std::size_t index = ex->built++;
    PostedWr wr{qpx->wr_id, Side::send, kOpcode, qpx->wr_flags};
    // An ibv_wr_* builder has no length yet (its data comes from a later
    // setter).
    record::WrSummary summary;
    summary.wr_id = wr.wr_id;
    summary.opcode = static_cast<std::uint8_t>(kOpcode);
    summary.flags = wr.send_flags;
    summary.has_flags = true;
    summary.has_length = false;
    ex->wrs.push_back(summary);
    if (qp != nullptr) run.checkers.send_built(run, *qp, wr.send_flags);
    if (qp != nullptr && ex->plan.stop == SIZE_MAX) {
      const std::size_t forced = ex->plan.force_signaled.size();
      engine::decide_wr(run.engine, *qp, qp, Verb::post_send, wr, index, ex->plan);
      force_signaled = ex->plan.force_signaled.size() > forced;
    }
  }
  // The application sets wr_flags before each builder and may rely on it
  // afterwards: the signaled bit is added for this WR only.
  const unsigned flags = qpx->wr_flags;
  if (force_signaled) qpx->wr_flags |= IBV_SEND_SIGNALED;
  original(qpx, args...);
  qpx->wr_flags = flags;
}

// Forgets the doomed WRs of a batch that was not posted (lock held).
void undoom(Run& run, ibv_qp_ex* qpx, const ExtendedQp& ex) {
  if (Tracked* qp = run.registry.find(&qpx->qp_base))
    while (qp->faults->doomed.size() > ex.doomed_before) qp->faults->doomed.pop_back();
}

void trace_batch(Run& run, ibv_qp_ex* qpx, ExtendedQp& ex, const char* call, int result) {
  if (Tracked* qp = run.registry.find(&qpx->qp_base)) {
    run.record(record::CallRecord(qp->id())
                     .add("call", call)
                     .add("wrs", std::span<const record::WrSummary>(ex.wrs))
                     .add("ret", result));
  }
  ex.wrs.clear();
}

int complete(ibv_qp_ex* qpx) {
  Run& run = process_run();
  ibv_qp* qp = &qpx->qp_base;
  int error = before_call(run, std::nullopt, qp);
  ExtendedQp snapshot;
  {
    std::lock_guard lock(run.mutex);
    ExtendedQp* ex = find(qpx);
    if (ex == nullptr) return EINVAL;
    if (error == 0) error = ex->plan.error;  // verb_failure: the whole batch fails
    if (error != 0) {
      undoom(run, qpx, *ex);
      trace_batch(run, qpx, *ex, "wr_complete", error);
    }
    snapshot.provider = ex->provider;
    snapshot.plan = ex->plan;
  }
  if (error != 0) {
    snapshot.provider.wr_abort(qpx);  // nothing of the batch is posted
    return error;
  }
  if (snapshot.plan.flush) inject::qp_to_error(qp);  // the batch is posted in ERR: flushed
  if (snapshot.plan.cm_disconnect != nullptr) cm_faults::peer_gone(run, snapshot.plan.cm_disconnect);
  const int result = snapshot.provider.wr_complete(qpx);
  std::lock_guard lock(run.mutex);
  if (result == 0) hang::progressed();
  if (ExtendedQp* ex = find(qpx)) {
    if (result != 0) undoom(run, qpx, *ex);
    trace_batch(run, qpx, *ex, "wr_complete", result);
  }
  return result;
}

void abort(ibv_qp_ex* qpx) {
  Run& run = process_run();
  decltype(ibv_qp_ex::wr_abort) original = nullptr;
  {
    std::lock_guard lock(run.mutex);
    ExtendedQp* ex = find(qpx);
    if (ex == nullptr) return;
    undoom(run, qpx, *ex);
    trace_batch(run, qpx, *ex, "wr_abort", 0);
    original = ex->provider.wr_abort;
  }
  original(qpx);
}

// Installs the trampolines into `qpx` over the provider's functions
// (lock held).
void wrap(ibv_qp_ex* qpx) {
  auto ex = std::make_unique<ExtendedQp>();
  ex->provider = *qpx;
  qpx->wr_start = start;
  qpx->wr_complete = complete;
  qpx->wr_abort = abort;
  // Only the builders the provider offers (the others stay NULL).
  if (qpx->wr_send) qpx->wr_send = build<&ibv_qp_ex::wr_send, Opcode::send>;
  if (qpx->wr_send_imm) qpx->wr_send_imm = build<&ibv_qp_ex::wr_send_imm, Opcode::send_with_imm>;
  if (qpx->wr_rdma_write) qpx->wr_rdma_write = build<&ibv_qp_ex::wr_rdma_write, Opcode::rdma_write>;
  if (qpx->wr_rdma_write_imm)
    qpx->wr_rdma_write_imm = build<&ibv_qp_ex::wr_rdma_write_imm, Opcode::rdma_write_with_imm>;
  if (qpx->wr_rdma_read) qpx->wr_rdma_read = build<&ibv_qp_ex::wr_rdma_read, Opcode::rdma_read>;
  if (qpx->wr_atomic_cmp_swp)
    qpx->wr_atomic_cmp_swp = build<&ibv_qp_ex::wr_atomic_cmp_swp, Opcode::atomic_cmp_and_swp>;
  if (qpx->wr_atomic_fetch_add)
    qpx->wr_atomic_fetch_add = build<&ibv_qp_ex::wr_atomic_fetch_add, Opcode::atomic_fetch_and_add>;
  extended_qps()[&qpx->qp_base] = std::move(ex);
}

}  // namespace

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  Run& run = process_run();
  const FastPathOps* ops = saved_ops(context);
  const void* parent = attr->pd != nullptr ? static_cast<const void*>(attr->pd) : context;
  if (int error = before_call(run, Verb::create_qp, parent)) {
    errno = error;
    return nullptr;
  }
  const Fields args = {{"type", attr->qp_type},
                       {"max_send_wr", attr->cap.max_send_wr},
                       {"max_recv_wr", attr->cap.max_recv_wr},
                       {"send_ops", attr->send_ops_flags},
                       {"sq_sig_all", attr->sq_sig_all}};
  ibv_qp* qp = nullptr;
  {
    FdLoan async_fd(run, context);  // the QP's async event file (a real provider)
    qp = ops->create_qp_ex(context, attr);
  }
  if (qp == nullptr) {
    const int error = errno;
    create_failed(run, parent, "create_qp_ex", args, error);
    errno = error;
    return nullptr;
  }
  created(run, ObjectKind::qp, qp, parent, "create_qp_ex", args);
  sge_limits(run, qp, attr->cap.max_send_sge, attr->cap.max_recv_sge);
  if (!run.active() || !(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) return qp;
  // ibv_qp_to_qp_ex(3) of the QP's provider.
  if (ibv_qp_ex* qpx = provider::qp_to_qp_ex(qp)) {
    std::lock_guard lock(run.mutex);
    wrap(qpx);
  }
  return qp;
}

}  // namespace verbfault::interposer

// Extended CQs (ibv_create_cq_ex(3)): ibv_create_cq_ex is inline in verbs.h
// and jumps through the verbs_context, and ibv_start_poll / ibv_next_poll /
// ibv_end_poll / ibv_wc_read_* are function pointers in the ibv_cq_ex, so
// the interposer replaces them. Under a plan each completion the provider
// hands out is copied, rewritten like a polled ibv_wc (completions.h: an
// injected error with its poisoned fields, flushes after it), and the
// ibv_wc_read_* trampolines answer from the copy; delayed_completion holds
// copies back and serves them on a later ibv_start_poll. partial_poll does
// not apply: the extended API takes one completion at a time.
#include "extended_cq_trampolines.h"

#include "completions.h"
#include "hang_watchdog.h"
#include "held_completions.h"
#include "injections.h"
#include "opcodes.h"
#include "saved_ops.h"
#include "run.h"

#include <cerrno>
#include <memory>
#include <type_traits>
#include <unordered_map>

namespace verbfault::interposer {

namespace {

// The interposer's view of one extended CQ. Guarded by the interposer lock,
// but `current`, which the application's poll section owns between
// ibv_start_poll and ibv_end_poll (ibv_create_cq_ex(3)).
struct ExtendedCq {
  ibv_cq_ex provider{};           // the provider's functions
  ibv_wc current{};               // what ibv_wc_read_* answer
  bool provider_polling = false;  // the provider's start_poll succeeded, end_poll pending
};

// Keyed by the CQ; an entry is replaced when a CQ is created at the same
// address, and only a CQ whose trampolines were installed looks it up.
std::unordered_map<const ibv_cq*, std::unique_ptr<ExtendedCq>>& extended_cqs() {
  static auto* cqs = new std::unordered_map<const ibv_cq*, std::unique_ptr<ExtendedCq>>();
  return *cqs;
}

ExtendedCq* find(ibv_cq_ex* cq_ex) {
  auto it = extended_cqs().find(ibv_cq_ex_to_cq(cq_ex));
  return it == extended_cqs().end() ? nullptr : it->second.get();
}

// The provider's current completion as an ibv_wc: every field it can read.
ibv_wc copy_current(const ibv_cq_ex& provider, ibv_cq_ex* cq_ex) {
  ibv_wc wc{};
  wc.wr_id = cq_ex->wr_id;
  wc.status = cq_ex->status;
  wc.opcode = provider.read_opcode(cq_ex);
  wc.vendor_err = provider.read_vendor_err(cq_ex);
  wc.wc_flags = provider.read_wc_flags(cq_ex);
  if (provider.read_byte_len) wc.byte_len = provider.read_byte_len(cq_ex);
  if (provider.read_imm_data) wc.imm_data = provider.read_imm_data(cq_ex);
  if (provider.read_qp_num) wc.qp_num = provider.read_qp_num(cq_ex);
  if (provider.read_src_qp) wc.src_qp = provider.read_src_qp(cq_ex);
  if (provider.read_slid) wc.slid = static_cast<std::uint16_t>(provider.read_slid(cq_ex));
  if (provider.read_sl) wc.sl = provider.read_sl(cq_ex);
  if (provider.read_dlid_path_bits) wc.dlid_path_bits = provider.read_dlid_path_bits(cq_ex);
  return wc;
}

// Makes `wc` the application's current completion and traces it (lock held).
int serve(Run& run, Tracked& cq, ibv_cq_ex* cq_ex, ExtendedCq& ex, const ibv_wc& wc,
          const char* call) {
  ex.current = wc;
  cq_ex->wr_id = wc.wr_id;
  cq_ex->status = wc.status;
  const record::Completions completion = run.completions(&wc, 1);
  run.checkers.polled(run, cq, 1, completion);
  run.record(record::CallRecord(cq.id()).add("call", call).add("ret", 0).add("wc", completion));
  hang::progressed();
  return 0;
}

int refuse(Run& run, Tracked& cq, const char* call, int error) {
  const std::string name = errno_name(error);
  run.record(record::CallRecord(cq.id()).add("call", call).add("ret", name));
  if (error == ENOENT) {
    run.checkers.polled(run, cq, 1, {});  // an empty poll
    hang::idle(call, cq.ref);
  }
  return error;
}

// An empty start_poll or next_poll (ENOENT, or the provider's error): the
// refusal traced, and for a start_poll the held completions that empty
// poll releases (held_completions.h). Their event, when the CQ was armed,
// is raised after the lock is released (raise_released_event).
struct EmptyPoll {
  int status = 0;
  bool event_for_released = false;
  bool simulated = false;
};

EmptyPoll empty_poll(Run& run, Tracked& tracked, const char* call, bool first, int error) {
  EmptyPoll empty{refuse(run, tracked, call, error)};
  if (first) {
    empty.event_for_released = release_after_empty_poll(run, tracked);
    empty.simulated = tracked.simulated;
  }
  return empty;
}

void raise_released_event(Run& run, ibv_cq* cq, const EmptyPoll& empty) {
  if (empty.event_for_released) (void)inject::spurious_cq_event(run.engine, cq, empty.simulated);
}

// ibv_start_poll (first) and ibv_next_poll: the next completion for the
// application, held ones first once due.
int next(ibv_cq_ex* cq_ex, bool first, ibv_poll_cq_attr* attr) {
  Run& run = process_run();
  ibv_cq* cq = ibv_cq_ex_to_cq(cq_ex);
  const char* call = first ? "start_poll" : "next_poll";
  if (int error = before_call(run, std::nullopt, cq, OnDeadDevice::work)) return error;
  ibv_cq_ex provider;
  bool provider_polling = false;
  {
    std::unique_lock lock(run.mutex);
    ExtendedCq* ex = find(cq_ex);
    Tracked* tracked = run.registry.find(cq);
    if (ex == nullptr || tracked == nullptr) return ENOENT;
    if (tracked->faults->overflowed) return refuse(run, *tracked, call, EIO);
    engine::ObjectFaults& faults = *tracked->faults;
    if (first) faults.absorb_next_event = false;  // the application looks at the CQ
    if (!faults.held.empty()) {
      if (faults.held_polls > 0) {
        // Still held: the CQ looks empty. An empty start_poll is an empty
        // poll (held_completions.h); a next_poll's ENOENT ends a poll that
        // returned some.
        const EmptyPoll empty = empty_poll(run, *tracked, call, first, ENOENT);
        lock.unlock();
        raise_released_event(run, cq, empty);
        return empty.status;
      }
      const ibv_wc wc = faults.held.front();
      faults.held.erase(faults.held.begin());
      return serve(run, *tracked, cq_ex, *ex, wc, call);
    }
    provider = ex->provider;
    provider_polling = ex->provider_polling;
  }
  // The provider's own session: opened by the first completion taken from
  // it, closed by the application's ibv_end_poll.
  ibv_poll_cq_attr none{};
  const int result = provider_polling ? provider.next_poll(cq_ex)
                                      : provider.start_poll(cq_ex, attr != nullptr ? attr : &none);
  ibv_wc wc{};
  if (result == 0) wc = copy_current(provider, cq_ex);
  ibv_qp* to_error = nullptr;
  bool close_provider = false;
  EmptyPoll empty;
  int returned = result;
  {
    std::lock_guard lock(run.mutex);
    ExtendedCq* ex = find(cq_ex);
    Tracked* tracked = run.registry.find(cq);
    if (ex == nullptr || tracked == nullptr) return result;
    if (result != 0) return refuse(run, *tracked, call, result);
    ex->provider_polling = true;
    // Rewrites and delays as for ibv_poll_cq (one completion); a delayed
    // one is held, and later polls do not reach the provider while
    // anything is held.
    const record::ObjectId qp = run.registry.qp_id(wc.qp_num);
    std::vector<ibv_qp*> errors;
    if (engine::apply_to_polled(run.engine, *tracked, &wc, &qp, 0, 1, errors) == 0) {
      // After ENOENT from start_poll the application does not call
      // end_poll: the provider's session is closed here.
      close_provider = first;
      empty = empty_poll(run, *tracked, call, first, ENOENT);
      returned = empty.status;
    } else {
      serve(run, *tracked, cq_ex, *ex, wc, call);
    }
    if (!errors.empty()) to_error = errors.front();
    if (close_provider) ex->provider_polling = false;
  }
  if (close_provider) provider.end_poll(cq_ex);
  if (to_error != nullptr) inject::qp_to_error(to_error);
  raise_released_event(run, cq, empty);
  return returned;
}

int start_poll(ibv_cq_ex* cq_ex, ibv_poll_cq_attr* attr) {
  if (attr == nullptr || attr->comp_mask != 0) return EINVAL;
  return next(cq_ex, true, attr);
}

int next_poll(ibv_cq_ex* cq_ex) {
  return next(cq_ex, false, nullptr);
}

void end_poll(ibv_cq_ex* cq_ex) {
  decltype(ibv_cq_ex::end_poll) provider_end = nullptr;
  {
    std::lock_guard lock(process_run().mutex);
    ExtendedCq* ex = find(cq_ex);
    if (ex == nullptr || !ex->provider_polling) return;  // served from held copies only
    ex->provider_polling = false;
    provider_end = ex->provider.end_poll;
  }
  provider_end(cq_ex);
}

// ibv_wc_read_*: a field of the current completion (poisoned when the
// interposer turned it into an error).
template <auto Field, class Result>
Result read(ibv_cq_ex* cq_ex) {
  std::lock_guard lock(process_run().mutex);
  ExtendedCq* ex = find(cq_ex);
  if (ex == nullptr) return Result{};
  // An error completion's opcode is the poison (ibv_poll_cq(3)): passed on
  // as it is, without loading it as an ibv_wc_opcode.
  if constexpr (std::is_enum_v<Result>)
    return static_cast<Result>(record::raw_value(ex->current.*Field));
  else
    return static_cast<Result>(ex->current.*Field);
}

// Installs the trampolines over the provider's functions (lock held); only
// the accessors the provider offers are replaced.
void wrap(ibv_cq_ex* cq_ex) {
  auto ex = std::make_unique<ExtendedCq>();
  ex->provider = *cq_ex;
  cq_ex->start_poll = start_poll;
  cq_ex->next_poll = next_poll;
  cq_ex->end_poll = end_poll;
  cq_ex->read_opcode = read<&ibv_wc::opcode, ibv_wc_opcode>;
  cq_ex->read_vendor_err = read<&ibv_wc::vendor_err, std::uint32_t>;
  cq_ex->read_wc_flags = read<&ibv_wc::wc_flags, unsigned int>;
  if (cq_ex->read_byte_len) cq_ex->read_byte_len = read<&ibv_wc::byte_len, std::uint32_t>;
  if (cq_ex->read_imm_data) cq_ex->read_imm_data = read<&ibv_wc::imm_data, __be32>;
  if (cq_ex->read_qp_num) cq_ex->read_qp_num = read<&ibv_wc::qp_num, std::uint32_t>;
  if (cq_ex->read_src_qp) cq_ex->read_src_qp = read<&ibv_wc::src_qp, std::uint32_t>;
  if (cq_ex->read_slid) cq_ex->read_slid = read<&ibv_wc::slid, std::uint32_t>;
  if (cq_ex->read_sl) cq_ex->read_sl = read<&ibv_wc::sl, std::uint8_t>;
  if (cq_ex->read_dlid_path_bits)
    cq_ex->read_dlid_path_bits = read<&ibv_wc::dlid_path_bits, std::uint8_t>;
  extended_cqs()[ibv_cq_ex_to_cq(cq_ex)] = std::move(ex);
}

}  // namespace

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  Run& run = process_run();
  const FastPathOps* ops = saved_ops(context);
  if (int error = before_call(run, Verb::create_cq, context)) {
    errno = error;
    return nullptr;
  }
  // Under a plan the interposer needs each completion's QP number; asking
  // for one more field changes nothing else. Without one the provider gets
  // the application's attributes untouched.
  ibv_cq_init_attr_ex own = *attr;
  if (run.active()) own.wc_flags |= IBV_WC_EX_WITH_QP_NUM;
  ibv_cq_ex* cq_ex = nullptr;
  {
    FdLoan channel_fd(run, attr->channel);
    FdLoan async_fd(run, context);
    cq_ex = ops->create_cq_ex(context, &own);
  }
  if (cq_ex == nullptr) {
    const int error = errno;
    create_failed(run, context, "create_cq_ex", {{"cqe", attr->cqe}, {"wc_flags", attr->wc_flags}},
                  error);
    errno = error;
    return nullptr;
  }
  created(run, ObjectKind::cq, ibv_cq_ex_to_cq(cq_ex), context, "create_cq_ex",
          {{"cqe", attr->cqe}, {"wc_flags", attr->wc_flags}});
  if (!run.active()) return cq_ex;
  std::lock_guard lock(run.mutex);
  wrap(cq_ex);
  return cq_ex;
}

}  // namespace verbfault::interposer

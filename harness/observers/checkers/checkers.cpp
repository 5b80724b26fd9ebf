#include "checkers.h"

#include "observation.h"
#include "opcodes.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace verbfault::checkers {

namespace {

// Posts to a QP after its error completion was polled before F18 is
// reported: a few are normal (the application may not have looked yet).
constexpr std::uint64_t kPostsAfterError = 16;
// Posts to a QP in ERR after which a retry loop is taken to never end: a
// program that re-posts a flushed WR forever (16 million times in 30 s,
// measured) is ended instead of spinning until CI kills it.
constexpr std::uint64_t kPostsAfterErrorLivelock = std::uint64_t{1} << 16;
// Empty polls in a row, with nothing that could ever complete, before the
// program is taken to be spinning forever.
constexpr std::uint64_t kSpinningPolls = 1u << 20;
// What the harness fills the undefined fields of an error completion with.
constexpr std::uint32_t kPoison32 = 0xa5a5a5a5u;
// How many failed work requests per QP are remembered for reported outcomes.
constexpr std::size_t kRememberedFailures = 4096;

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

bool nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) != 0;
}

std::string json_escape(const std::string& text) {
  return nlohmann::json(text).dump();
}

}  // namespace

void Checkers::configure(CheckSelection selection, std::string findings_file) {
  selection_ = std::move(selection);
  findings_file_ = std::move(findings_file);
}

void Checkers::object_added(const Object& object) {
  if (object.slot >= slots_.size())
    slots_.resize(std::max<std::size_t>(object.slot + 1, 2 * slots_.size()));
  slots_[object.slot] = Watched{&object, {}};
}

void Checkers::forget(const Object& object) {
  if (object.slot >= slots_.size()) return;
  remembered_failures_ -= slots_[object.slot].checks.failed.size();
  slots_[object.slot] = Watched{};
}

std::vector<const Object*> Checkers::all(ObjectKind kind) const {
  std::vector<const Object*> found;
  for (const Watched& watched : slots_)
    if (watched.object != nullptr && watched.object->ref.kind == kind)
      found.push_back(watched.object);
  std::sort(found.begin(), found.end(),
            [](const Object* a, const Object* b) { return a->ref.index < b->ref.index; });
  return found;
}

void Checkers::report(Host& host, std::string_view id, const Object& object, std::string message) {
  if (!on(id) || !reported_.emplace(std::string(id), object.name()).second) return;
  Finding finding{std::string(id), object.name(), std::move(message), host.trace_position(),
                  host.replay_line()};
  std::fprintf(stderr,
               "verbfault: check %s on %s (trace record %llu): %s\nverbfault:   replay: %s\n",
               finding.check.c_str(), finding.object.c_str(),
               static_cast<unsigned long long>(finding.trace_position), finding.message.c_str(),
               finding.replay.c_str());
  host.record(
      record::CallRecord(object.id()).add("check", finding.check).add("message", finding.message));
  // The findings file (verbfault run --findings; VERBFAULT_FINDINGS): one
  // JSON object a finding; `verbfault run` fails a passing program on the
  // ones that fail the run.
  if (!findings_file_.empty()) {
    if (FILE* out = std::fopen(findings_file_.c_str(), "a")) {
      std::fprintf(out,
                   "{\"check\":%s,\"object\":%s,\"trace_position\":%llu,\"message\":%s,"
                   "\"replay\":%s,\"fails_run\":%s}\n",
                   json_escape(finding.check).c_str(), json_escape(finding.object).c_str(),
                   static_cast<unsigned long long>(finding.trace_position),
                   json_escape(finding.message).c_str(), json_escape(finding.replay).c_str(),
                   fails_run(id) ? "true" : "false");
      std::fclose(out);
    }
  }
  findings_.push_back(std::move(finding));
}

void Checkers::report_causes_of_hang(Host& host) {
  // Completions an armed CQ of the event loop holds that no event will
  // announce: the waiter's check let them pass while another thread could
  // still poll them; none can now.
  for (const Watched& watched : slots_)
    if (watched.object != nullptr && watched.object->ref.kind == ObjectKind::cq &&
        watched.checks.used_with_events)
      report_unannounced(host, *watched.object);
}

void Checkers::end_hung_run(Host& host, std::string_view id, const Object& object,
                            std::string message, std::string_view doing) {
  reported_.erase({std::string(id), object.name()});  // a hang is always told
  report_causes_of_hang(host);
  const bool was_on = on(id);
  report(host, id, object, std::move(message));
  if (!was_on) return;
  const std::string threads = host.threads_report(doing);
  if (!threads.empty())
    std::fprintf(stderr, "verbfault: no other thread can act:\n%s", threads.c_str());
  std::fprintf(stderr,
               "verbfault: the program can never make progress; ending it with exit status %d\n",
               exit_status::kHang);
  host.end_run(exit_status::kHang);
}

std::string Checkers::needing_simulated_device() const {
  std::string ids;
  for (const CheckInfo& check : catalogue())
    if (check.needs_simulated_device && on(check.id))
      ids += (ids.empty() ? "" : ", ") + std::string(check.id);
  return ids;
}

void Checkers::hung(Host& host, const Object& object, std::string message,
                    const std::string& waits) {
  constexpr std::string_view kId = "liveness.hang";
  if (!on(kId)) return;
  reported_.erase({std::string(kId), object.name()});  // a hang is always told
  report_causes_of_hang(host);
  report(host, kId, object, std::move(message));
  std::fprintf(stderr, "verbfault: what each thread waits for:\n%s", waits.c_str());
  std::fprintf(stderr, "verbfault: the program made no progress; ending it with exit status %d\n",
               exit_status::kHang);
  host.end_run(exit_status::kHang);
}

// ---- completion events --------------------------------------------------------------

std::size_t Checkers::depth(const Host& host, const Object& cq) const {
  auto* verbs = static_cast<ibv_cq*>(const_cast<void*>(cq.handle));
  return provider::cq_depth(verbs) + host.held_completions(cq);
}

void Checkers::check_cq_before_wait(Host& host, const Object& cq, bool another_armed,
                                    bool event_pending) {
  ObjectChecks& c = of(cq);
  if (!c.used_with_events) return;
  auto* verbs = static_cast<ibv_cq*>(const_cast<void*>(cq.handle));
  if (!c.armed) {
    // An unarmed CQ is a mistake only when the wait can end by no other
    // way: another CQ of the channel armed (a send CQ armed only while
    // sends are outstanding is right), or another thread that may still
    // arm it, make it legal, whatever the interleaving. With an event
    // pending on the channel the call does not wait: it returns the event,
    // and the program may still re-arm before it waits (UCX takes every
    // event from its channel before it re-arms, uct_ib_iface_pre_arm).
    if (!event_pending && !another_armed &&
        !(cq.simulated && provider::cq_event_pending(verbs)) && host.alone())
      report(host, "event.not_rearmed", cq,
             "waiting on the channel, but this CQ was not re-armed (ibv_req_notify_cq) since "
             "its last event: no further event will come from it");
    return;
  }
  // Another thread may still poll them (a notifier thread waits while a
  // poller drains): a mistake only when no other thread can act.
  if (host.alone()) report_unannounced(host, cq);
}

void Checkers::report_unannounced(Host& host, const Object& cq) {
  const ObjectChecks& c = of(cq);
  // How many completions wait in the CQ: known on the simulated device only.
  if (!cq.simulated || !c.armed) return;
  const std::size_t waiting = depth(host, cq);
  // Completions that were there when the CQ was armed, or that a partial
  // drain left behind, raise no event (IBA 11.4.2.2: an arm covers the next
  // completion). A device may still fire one on the arm (a freedom the seed
  // draws); a program that counts on it hangs on devices that do not.
  if (waiting == 0 || c.drained_since_arm || (!c.polled_since_arm && c.arm_depth == 0)) return;
  // Only the ones it held when armed count: a completion that arrived
  // since raised the event the arm asked for (ibv_req_notify_cq(3)). Polls
  // return the oldest first, so the ones polled since the arm were those.
  const std::size_t stranded = std::min<std::uint64_t>(c.arm_unpolled, waiting);
  if (stranded == 0) return;
  if (c.drained_since_event && !c.polled_since_arm) {
    report(host, "poll.stranded_between_poll_and_arm", cq,
           std::to_string(stranded) +
               " completion(s) arrived after the last empty poll and before the re-arm, and "
               "were not polled before waiting: no event will report them (poll once more "
               "after ibv_req_notify_cq)");
  } else {
    report(host, "poll.wait_without_drain", cq,
           "waiting for an event while the CQ still holds " + std::to_string(stranded) +
               " completion(s) it held when re-armed: drain it (poll until empty) after "
               "re-arming");
  }
}

void Checkers::before_cq_event_wait(Host& host, const Object& channel) {
  // The channel's CQs in creation order, gathered in a kept buffer: an
  // event loop's every wait passes here.
  waiting_cqs_.clear();
  for (const Watched& watched : slots_)
    if (watched.object != nullptr && watched.object->ref.kind == ObjectKind::cq &&
        static_cast<const ibv_cq*>(watched.object->handle)->channel == channel.handle)
      waiting_cqs_.push_back(watched.object);
  std::sort(waiting_cqs_.begin(), waiting_cqs_.end(),
            [](const Object* a, const Object* b) { return a->ref.index < b->ref.index; });
  // On a non-blocking channel with no event pending the call fails with
  // EAGAIN: it waits for nothing, and the program's wait is its poll(2) or
  // epoll on the fd, if any.
  const int fd = static_cast<const ibv_comp_channel*>(channel.handle)->fd;
  const bool event_pending = readable(fd);
  if (!event_pending && nonblocking(fd)) return;
  bool any_armed = false;
  for (const Object* cq : waiting_cqs_) any_armed = any_armed || of(*cq).armed;
  for (const Object* cq : waiting_cqs_) check_cq_before_wait(host, *cq, any_armed, event_pending);
  // A wait that nothing can end: no event pending, nothing scheduled on the
  // device, no other thread to make a verbs call.
  if (channel.simulated && !event_pending && host.alone() && !provider::work_pending())
    end_hung_run(host, "liveness.blocked_forever", channel,
                 "blocked in ibv_get_cq_event with no event pending, no work on the device and "
                 "no other thread to post any: nothing can ever wake it",
                 "ibv_get_cq_event on " + channel.name());
}

void Checkers::cq_event_wait_begins(const Object& channel) {
  ++of(channel).cq_event_waiters;
}

void Checkers::cq_event_wait_ended(const Object& channel) {
  ObjectChecks& c = of(channel);
  if (c.cq_event_waiters > 0) --c.cq_event_waiters;
}

const Object* Checkers::channel_object(const void* handle) const {
  if (handle == nullptr) return nullptr;
  for (const Watched& watched : slots_)
    if (watched.object != nullptr && watched.object->handle == handle &&
        watched.object->ref.kind == ObjectKind::channel)
      return watched.object;
  return nullptr;
}

void Checkers::joining(Host& host) {
  for (const Watched& watched : slots_)
    if (watched.object != nullptr && watched.checks.cq_event_waiters > 0) {
      reached(host, Window::channel_wait_during_teardown, *watched.object);
      return;
    }
}

void Checkers::reached(Host& host, Window window, const Object& object) {
  const std::uint32_t bit = std::uint32_t{1} << static_cast<unsigned>(window);
  if ((windows_reached_ & bit) != 0) return;
  windows_reached_ |= bit;
  host.record(record::CallRecord(object.id()).add("window", window_name(window)));
}

void Checkers::cq_event_taken(Host& host, const Object& cq) {
  ObjectChecks& c = of(cq);
  // What the event stood for, on the simulated device (which can say how
  // many completions wait): several (a loop taking one per event leaves
  // the rest), or none (an earlier drain took the one that raised it).
  if (cq.simulated) {
    const std::size_t waiting = depth(host, cq);
    if (waiting >= 2) reached(host, Window::event_for_several_completions, cq);
    if (waiting == 0) reached(host, Window::event_with_empty_cq, cq);
  }
  c.armed = false;  // an event disarms its CQ
  ++c.cq_events_taken;
  c.used_with_events = true;
  c.drained_since_event = false;
  idle_polls_ = 0;
}

void Checkers::cq_events_acked(Host& host, const Object& cq, unsigned int count) {
  ObjectChecks& c = of(cq);
  if (c.cq_events_acked + count > c.cq_events_taken) {
    report(host, "ack.cq_events_overacked", cq,
           "ibv_ack_cq_events(" + std::to_string(count) + ") with " +
               std::to_string(c.cq_events_taken - c.cq_events_acked) +
               " event(s) of this CQ unacknowledged: acks meant for another CQ? (libibverbs' "
               "destroy_cq then waits forever)");
  }
  c.cq_events_acked += count;
}

void Checkers::armed(Host& host, const Object& cq) {
  ObjectChecks& c = of(cq);
  c.armed = true;
  c.arm_depth = cq.simulated ? depth(host, cq) : 0;
  // Completions that came after the last poll found the CQ empty, and
  // before this arm: they raise no event (ibv_req_notify_cq(3)).
  if (c.last_poll_empty && c.arm_depth > 0)
    reached(host, Window::completion_between_poll_and_arm, cq);
  c.arm_unpolled = c.arm_depth;
  c.polled_since_arm = false;
  c.drained_since_arm = false;
}

void Checkers::polled(Host& host, const Object& cq, int asked,
                      const record::Completions& completions) {
  ObjectChecks& c = of(cq);
  const ibv_wc* wc = completions.wc;
  const int returned = static_cast<int>(completions.count);
  c.polled_since_arm = true;
  c.last_poll_empty = returned == 0 && asked > 0;
  c.arm_unpolled -= std::min<std::uint64_t>(c.arm_unpolled, static_cast<std::uint64_t>(returned));
  if (returned == 0 && asked > 0) c.drained_since_event = c.drained_since_arm = true;
  // Failures are remembered per QP; a success only has to forget one, and
  // costs nothing while no failure is remembered (the usual poll).
  for (int i = 0; i < returned; ++i) {
    const bool failed = wc[i].status != IBV_WC_SUCCESS;
    if (!failed && remembered_failures_ == 0) continue;
    const record::ObjectId qp = completions.qps[i];
    if (!qp.valid() || qp.slot >= slots_.size() || slots_[qp.slot].object == nullptr) continue;
    ObjectChecks& q = slots_[qp.slot].checks;
    if (!failed) {
      remembered_failures_ -= q.failed.erase(wc[i].wr_id);
      continue;
    }
    q.error_polled = true;
    if (!q.failed.insert_or_assign(wc[i].wr_id, wc[i].status).second) continue;
    ++remembered_failures_;
    q.failed_order.push_back(wc[i].wr_id);
    if (q.failed_order.size() > kRememberedFailures) {
      remembered_failures_ -= q.failed.erase(q.failed_order.front());
      q.failed_order.pop_front();
    }
  }
  if (returned != 0 || !cq.simulated) {
    idle_polls_ = 0;
    return;
  }
  // An empty poll of a simulated CQ: spinning forever when nothing can come.
  if (++idle_polls_ < kSpinningPolls) return;
  idle_polls_ = 0;
  if (depth(host, cq) == 0 && !provider::work_pending() && host.alone())
    end_hung_run(host, "liveness.spinning", cq,
                 std::to_string(kSpinningPolls) +
                     " empty polls in a row with no work on the device and no other thread to "
                     "post any: no completion can ever arrive",
                 "ibv_poll_cq of " + cq.name() + ", empty, over and over");
}

// ---- async events ---------------------------------------------------------------------

void Checkers::before_async_event_wait(Host& host, const Object& context) {
  if (!context.simulated) return;
  const int async_fd = static_cast<const ibv_context*>(context.handle)->async_fd;
  if (readable(async_fd) || nonblocking(async_fd)) return;
  if (host.alone() && !provider::work_pending())
    end_hung_run(host, "liveness.blocked_forever", context,
                 "blocked in ibv_get_async_event with no event pending, no work on the device "
                 "and no other thread to make a verbs call: nothing can ever wake it",
                 "ibv_get_async_event on " + context.name());
}

void Checkers::async_event_taken(const Object& element) {
  ++of(element).async_taken;
  idle_polls_ = 0;
}

void Checkers::async_event_acked(Host& host, const Object* element) {
  if (element == nullptr) return;
  ObjectChecks& c = of(*element);
  if (c.async_acked >= c.async_taken) {
    report(host, "ack.async_overacked", *element,
           "ibv_ack_async_event for an event of this object that was not taken, or twice");
    return;
  }
  ++c.async_acked;
}

// ---- work requests -----------------------------------------------------------------------

void Checkers::check_poisoned(Host& host, const Object& qp, std::uint64_t wr_id,
                              std::uint64_t length, std::uint32_t opcode) {
  if (length != kPoison32 && opcode != kPoison32) return;
  report(host, "error.poisoned_field_used", qp,
         "work request " + std::to_string(wr_id) + " carries 0xa5a5a5a5 (a " +
             (opcode == kPoison32 ? "opcode" : "length") +
             " taken from an error completion, where ibv_poll_cq(3) leaves it undefined)");
}

void Checkers::count_post(Host& host, const Object& qp) {
  ObjectChecks& c = of(qp);
  if (!c.capacity_judged) {
    c.capacity_judged = true;
    judge_cq_capacity(host, qp);
  }
  if (c.error_polled && ++c.posts_after_error == kPostsAfterError)
    report(host, "error.post_to_qp_in_err", qp,
           std::to_string(kPostsAfterError) +
               " posts after one of its error completions was polled: the QP is in ERR and "
               "flushes everything until it is reset (ibv_modify_qp to RESET) or replaced");
  if (c.posts_after_error == kPostsAfterErrorLivelock)
    end_hung_run(host, "liveness.posting_to_qp_in_err", qp,
                 std::to_string(kPostsAfterErrorLivelock) +
                     " posts to this QP since one of its error completions was polled, and no "
                     "reset: a retry loop on a QP in ERR, which flushes every post, never ends",
                 "posting to " + qp.name() + " in ERR, over and over");
}

void Checkers::send_built(Host& host, const Object& qp, unsigned int send_flags) {
  ObjectChecks& c = of(qp);
  idle_polls_ = 0;
  if ((send_flags & IBV_SEND_SIGNALED) || c.sq_sig_all) {
    c.unsignaled_run = 0;
  } else if (++c.unsignaled_run >= c.max_send_wr && c.max_send_wr > 0) {
    report(host, "resource.unsignaled_sends_fill_queue", qp,
           std::to_string(c.unsignaled_run) + " unsignaled sends in a row on a send queue of " +
               std::to_string(c.max_send_wr) +
               ": a send slot is freed only by a polled completion of a later signaled WR, so "
               "the queue fills and ibv_post_send fails with ENOMEM");
  }
  count_post(host, qp);
}

void Checkers::send_posted(Host& host, const Object& qp, const ibv_send_wr* list) {
  if (qp.cm_disconnected) posted_after_disconnect(host, qp);
  for (const ibv_send_wr* wr = list; wr != nullptr; wr = wr->next) {
    const int sges = qp.readable_sges(wr->num_sge, wr->sg_list, /*send=*/true);
    for (int i = 0; i < sges; ++i) check_poisoned(host, qp, wr->wr_id, wr->sg_list[i].length, 0);
    check_poisoned(host, qp, wr->wr_id, 0, record::raw_value(wr->opcode));
    send_built(host, qp, wr->send_flags);
  }
}

void Checkers::recv_posted(Host& host, const Object& object, const ibv_recv_wr* list) {
  idle_polls_ = 0;
  if (object.cm_disconnected) posted_after_disconnect(host, object);
  for (const ibv_recv_wr* wr = list; wr != nullptr; wr = wr->next) {
    const int sges = object.readable_sges(wr->num_sge, wr->sg_list, /*send=*/false);
    for (int i = 0; i < sges; ++i)
      check_poisoned(host, object, wr->wr_id, wr->sg_list[i].length, 0);
    count_post(host, object);
  }
}

void Checkers::qp_modified(const Object& qp, const ibv_qp_attr& attr, int mask) {
  if ((mask & IBV_QP_STATE) && record::raw_value(attr.qp_state) == IBV_QPS_RESET) {
    ObjectChecks& c = of(qp);
    c.error_polled = false;
    c.posts_after_error = 0;
    c.unsignaled_run = 0;
  }
}

// ---- outcomes the application reports ------------------------------------------------

void Checkers::outcome_reported(Host& host, const Object& qp, std::uint64_t wr_id, bool success) {
  if (!success) return;
  const ObjectChecks& c = of(qp);
  auto it = c.failed.find(wr_id);
  if (it == c.failed.end()) return;
  report(host, "error.failure_reported_as_success", qp,
         "work request " + std::to_string(wr_id) +
             " was reported a success, but its completion was " + ibv_wc_status_str(it->second) +
             " (a flushed WR did not happen)");
}

// ---- objects ------------------------------------------------------------------------------

void Checkers::qp_created(Host&, const Object& qp, std::uint32_t max_send_wr,
                          std::uint32_t max_recv_wr, bool sq_sig_all) {
  ObjectChecks& c = of(qp);
  c.max_send_wr = max_send_wr;
  c.max_recv_wr = max_recv_wr;
  c.sq_sig_all = sq_sig_all;
}

void Checkers::judge_cq_capacity(Host& host, const Object& qp) {
  // F16: every WR of every QP on a CQ may be outstanding at once. Judged
  // when the QP posts its first WR: UCX, libfabric and Open MPI create QPs
  // on a 1-entry CQ to probe a device's limits and destroy them unused.
  for (ibv_cq* cq : {qp.send_cq, qp.recv_cq}) {
    if (cq == nullptr) continue;
    const Object* cq_record = nullptr;
    for (const Object* candidate : all(ObjectKind::cq))
      if (candidate->handle == cq) cq_record = candidate;
    if (cq_record == nullptr) continue;
    std::uint64_t outstanding = 0;
    for (const Object* other : all(ObjectKind::qp)) {
      if (other->send_cq == cq) outstanding += of(*other).max_send_wr;
      if (other->recv_cq == cq) outstanding += of(*other).max_recv_wr;
    }
    if (outstanding > static_cast<std::uint64_t>(cq->cqe))
      report(host, "resource.cq_too_small", *cq_record,
             "its QPs can have " + std::to_string(outstanding) +
                 " work requests outstanding (max_send_wr + max_recv_wr) but it holds " +
                 std::to_string(cq->cqe) + " completions: it overflows when they all complete");
    if (qp.send_cq == qp.recv_cq) break;
  }
}

bool Checkers::destroy_never_returns(Host& host, const Object& object, std::uint64_t taken,
                                     std::uint64_t acked) const {
  // The simulated device fails such a destroy with EBUSY instead
  // (VERBFAULT_DESTROY_CQ_UNACKED); another thread may still ack.
  if (object.simulated || !host.alone()) return false;
  // Too few acks: only this thread could give the rest, and it is about to
  // wait. Too many: libibverbs waits until its count of acks equals the
  // events the kernel reported (ibv_destroy_cq's wait in rdma-core), which
  // only events still queued on the channel, unread, could make up for.
  if (taken > acked) return true;
  if (object.ref.kind != ObjectKind::cq) return false;
  const ibv_comp_channel* channel = static_cast<const ibv_cq*>(object.handle)->channel;
  return channel == nullptr || !readable(channel->fd);
}

void Checkers::destroying(Host& host, const Object& object) {
  const ObjectChecks& c = of(object);
  // A thread still waits on the channel this teardown takes away from it.
  const void* channels[2] = {};
  if (object.ref.kind == ObjectKind::channel) channels[0] = object.handle;
  if (object.ref.kind == ObjectKind::cq)
    channels[0] = static_cast<const ibv_cq*>(object.handle)->channel;
  if (object.ref.kind == ObjectKind::qp) {
    const auto* qp = static_cast<const ibv_qp*>(object.handle);
    if (qp->send_cq != nullptr) channels[0] = qp->send_cq->channel;
    if (qp->recv_cq != nullptr) channels[1] = qp->recv_cq->channel;
  }
  for (const void* handle : channels)
    if (const Object* channel = channel_object(handle);
        channel != nullptr && of(*channel).cq_event_waiters > 0)
      reached(host, Window::channel_wait_during_teardown, *channel);
  const std::string doing = "ibv_destroy_" + std::string(to_string(object.ref.kind)) + " of " +
                            object.name() + ", waiting for acknowledgements";
  if (object.ref.kind == ObjectKind::cq && c.cq_events_taken != c.cq_events_acked) {
    std::string message = "ibv_destroy_cq with " + std::to_string(c.cq_events_taken) +
                          " completion event(s) taken and " + std::to_string(c.cq_events_acked) +
                          " acknowledged: libibverbs waits here forever (ibv_ack_cq_events "
                          "each event first)";
    // On a real provider the destroy would hang the run: it ends instead.
    if (destroy_never_returns(host, object, c.cq_events_taken, c.cq_events_acked))
      end_hung_run(host, "ack.cq_events_unacked_at_destroy", object, std::move(message), doing);
    else
      report(host, "ack.cq_events_unacked_at_destroy", object, std::move(message));
  }
  if (c.async_taken != c.async_acked) {
    std::string message = "destroyed with " + std::to_string(c.async_taken) +
                          " async event(s) taken and " + std::to_string(c.async_acked) +
                          " acknowledged: libibverbs waits here forever (ibv_ack_async_event "
                          "each first)";
    if (c.async_taken > c.async_acked &&
        destroy_never_returns(host, object, c.async_taken, c.async_acked))
      end_hung_run(host, "ack.async_unacked_at_destroy", object, std::move(message), doing);
    else
      report(host, "ack.async_unacked_at_destroy", object, std::move(message));
  }
}

void Checkers::destroy_refused(Host& host, const Object& object, int error) {
  if (error != EBUSY) return;
  const ObjectChecks& c = of(object);
  if (c.cq_events_taken != c.cq_events_acked || c.async_taken != c.async_acked) return;
  report(host, "resource.destroy_order", object,
         "destroy refused with EBUSY: objects that depend on it (QPs on a CQ or SRQ, children "
         "of a PD, CQs of a channel) must be destroyed first");
}

void Checkers::closed_with_children(Host& host, const Object& context, const std::string& names) {
  report(host, "resource.destroy_order", context,
         "ibv_close_device with objects of the context still alive (" + names +
             "): ibv_close_device(3) does not release them; destroy them first");
}

void Checkers::posted_after_disconnect(Host& host, const Object& qp) {
  report(host, "cm.post_after_disconnect", qp,
         "a work request posted after the application read DISCONNECTED for " +
             to_string(qp.cm_id) +
             ", which connected this QP: the connection is gone, the request can only fail "
             "(flushed, or retried until RETRY_EXC_ERR)");
}

void Checkers::cm_event_never_comes(Host& host, const Object& id, const std::string& file) {
  report(host, "liveness.blocked_forever", id,
         "blocked in rdma_get_cm_event on " + file +
             " while every thread waits: no event can come to it (no message on the way, "
             "nothing due on the virtual clock, no other process to send one)");
}

void Checkers::cm_id_destroyed_with_qp(Host& host, const Object& id, const Object& qp) {
  report(host, "cm.destroy_id_with_qp", id,
         "rdma_destroy_id with its QP " + qp.name() +
             " still alive: rdma_destroy_id(3) asks that the QP be freed first "
             "(rdma_destroy_qp); the QP is left connected to nothing");
}

void Checkers::cm_destroy_id_unacked(Host& host, const Object& id, unsigned count,
                                     const std::string& events) {
  std::string message = "rdma_destroy_id with " + std::to_string(count) +
                        " event(s) taken and not acknowledged (" + events +
                        "): librdmacm waits in it until each is acknowledged "
                        "(rdma_destroy_id(3): ack all related events first)";
  // Only another thread could ack them; with none, the destroy never returns.
  if (host.alone())
    end_hung_run(host, "cm.destroy_id_unacked_events", id, std::move(message),
                 "rdma_destroy_id of " + id.name() + ", waiting for acknowledgements");
  else
    report(host, "cm.destroy_id_unacked_events", id, std::move(message));
}

void Checkers::cm_event_acked_twice(Host& host, const Object& id, std::string_view event) {
  report(host, "cm.event_acked_twice", id,
         "rdma_ack_cm_event of its " + std::string(event) +
             " event, acknowledged already: librdmacm freed the event at the first ack "
             "(rdma_ack_cm_event(3): one ack for each successful get); refused with EINVAL");
}

void Checkers::cm_private_data_too_long(Host& host, const Object& id, std::string_view call,
                                        unsigned length, unsigned room) {
  report(host, "cm.private_data_too_long", id,
         std::string(call) + " with " + std::to_string(length) +
             " bytes of private data where the message carries " + std::to_string(room) +
             " (IBA 12.6: REQ 92 bytes less rdma_cm's 36-byte header, REP 196, REJ 148, SIDR REQ "
             "216 less 36, SIDR REP 136): the call fails with EINVAL");
}

void Checkers::exiting(Host& host) {
  std::string leaked;
  const Object* first = nullptr;
  for (ObjectKind kind : {ObjectKind::qp, ObjectKind::srq, ObjectKind::cq, ObjectKind::ah,
                          ObjectKind::mr, ObjectKind::pd, ObjectKind::channel, ObjectKind::context})
    for (const Object* object : all(kind)) {
      if (object->kept_by_library) continue;        // librdmacm's own, kept by design
      if (object->inherited_from_parent) continue;  // a forked child's copy of its parent's
      if (!leaked.empty()) leaked += ", ";
      leaked += object->name();
      if (first == nullptr) first = object;
    }
  if (first != nullptr) report(host, "resource.leak_at_exit", *first, "alive at exit: " + leaked);
}

}  // namespace verbfault::checkers

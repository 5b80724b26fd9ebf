#include "checkers.h"

#include "observation.h"
#include "state.h"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace verbfault::checkers {

namespace {

// Posts to a QP after its error completion was polled before F18 is
// reported: a few are normal (the application may not have looked yet).
constexpr std::uint64_t kPostsAfterError = 16;
// Empty polls in a row, with nothing that could ever complete, before the
// program is taken to be spinning forever.
constexpr std::uint64_t kSpinningPolls = 1u << 20;
// What the harness fills the undefined fields of an error completion with.
constexpr std::uint32_t kPoison32 = 0xa5a5a5a5u;
// How many failed work requests per QP are remembered for reported outcomes.
constexpr std::size_t kRememberedFailures = 4096;

// Nothing but the blocked thread can make a verbs call: the process has one
// thread.
bool single_threaded() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return false;
  int count = 0;
  while (dirent* entry = readdir(tasks))
    if (entry->d_name[0] != '.') ++count;
  closedir(tasks);
  return count == 1;
}

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

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string line, word;
  while (std::getline(in, word, '\0')) {
    const bool plain = word.find_first_of(" '\"\\$`") == std::string::npos && !word.empty();
    line += (line.empty() ? "" : " ") + (plain ? word : "'" + word + "'");
  }
  return line;
}

}  // namespace

void Checkers::configure(CheckSelection selection, std::string findings_file) {
  selection_ = std::move(selection);
  findings_file_ = std::move(findings_file);
}

std::string Checkers::replay_line(State& state) const {
  if (const char* line = std::getenv("VERBFAULT_REPRODUCE")) return line;  // from verbfault run
  return interposer::environment_line(state.engine.plan(), state.engine.seed()) + " " +
         command_line();
}

void Checkers::report(State& state, std::string_view id, Tracked& object, std::string message) {
  if (!on(id) || !reported_.emplace(std::string(id), object.name()).second) return;
  Finding finding{std::string(id), object.name(), std::move(message), state.trace.records(),
                  replay_line(state)};
  std::fprintf(stderr,
               "verbfault: check %s on %s (trace record %llu): %s\nverbfault:   replay: %s\n",
               finding.check.c_str(), finding.object.c_str(),
               static_cast<unsigned long long>(finding.trace_position), finding.message.c_str(),
               finding.replay.c_str());
  state.record(
      record::CallRecord(object.id()).add("check", finding.check).add("message", finding.message));
  // The findings file counts what fails the run.
  if (!findings_file_.empty() && fails_run(id)) {
    if (FILE* out = std::fopen(findings_file_.c_str(), "a")) {
      std::fprintf(out, "{\"check\":%s,\"object\":%s,\"trace_position\":%llu,\"message\":%s}\n",
                   json_escape(finding.check).c_str(), json_escape(finding.object).c_str(),
                   static_cast<unsigned long long>(finding.trace_position),
                   json_escape(finding.message).c_str());
      std::fclose(out);
    }
  }
  findings_.push_back(std::move(finding));
}

void Checkers::end_hung_run(State& state, std::string_view id, Tracked& object,
                            std::string message) {
  reported_.erase({std::string(id), object.name()});  // a hang is always told
  const bool was_on = on(id);
  report(state, id, object, std::move(message));
  if (!was_on) return;
  std::fprintf(stderr,
               "verbfault: the program can never make progress; ending it with exit status %d\n",
               kHangExit);
  state.finish(/*check_leaks=*/false);  // the lock is ours: no leak check
  std::fflush(nullptr);
  std::_Exit(kHangExit);
}

// ---- completion events --------------------------------------------------------------

namespace {

// The completions a simulated CQ holds, the harness's held ones included.
std::size_t depth(Tracked& cq) {
  auto* verbs = static_cast<ibv_cq*>(const_cast<void*>(cq.handle));
  return provider::cq_depth(verbs) + cq.held.size();
}

}  // namespace

void Checkers::check_cq_before_wait(State& state, Tracked& cq) {
  ObjectChecks& c = cq.checks;
  if (!c.used_with_events) return;
  auto* verbs = static_cast<ibv_cq*>(const_cast<void*>(cq.handle));
  // Tracked::armed: a req_notify_cq since the last event it delivered.
  if (!cq.armed) {
    if (!(cq.simulated && provider::cq_event_pending(verbs)))
      report(state, "event.not_rearmed", cq,
             "waiting on the channel, but this CQ was not re-armed (ibv_req_notify_cq) since "
             "its last event: no further event will come from it");
    return;
  }
  // How many completions wait in the CQ: known on the simulated device only.
  if (!cq.simulated) return;
  const std::size_t waiting = depth(cq);
  // Completions that were there when the CQ was armed, or that a partial
  // drain left behind, raise no event (IBA 11.4.2.2: an arm covers the next
  // completion). A device may still fire one on the arm (a freedom the seed
  // draws); a program that counts on it hangs on devices that do not.
  if (waiting == 0 || c.drained_since_arm || (!c.polled_since_arm && c.arm_depth == 0)) return;
  if (c.drained_since_event && !c.polled_since_arm) {
    report(state, "poll.stranded_between_poll_and_arm", cq,
           std::to_string(waiting) +
               " completion(s) arrived after the last empty poll and before the re-arm, and "
               "were not polled before waiting: no event will report them (poll once more "
               "after ibv_req_notify_cq)");
  } else {
    report(state, "poll.wait_without_drain", cq,
           "waiting for an event while the CQ still holds " + std::to_string(waiting) +
               " completion(s) it held when re-armed: drain it (poll until empty) after "
               "re-arming");
  }
}

void Checkers::before_cq_event_wait(State& state, ibv_comp_channel* channel) {
  Tracked* channel_record = state.registry.find(channel);
  if (channel_record == nullptr) return;
  for (Tracked* cq : state.registry.all(ObjectKind::cq))
    if (static_cast<const ibv_cq*>(cq->handle)->channel == channel)
      check_cq_before_wait(state, *cq);
  // A wait that nothing can end: no event pending, nothing scheduled on the
  // device, no other thread to make a verbs call.
  if (channel_record->simulated && !readable(channel->fd) && !nonblocking(channel->fd) &&
      single_threaded() && !provider::work_pending())
    end_hung_run(state, "liveness.blocked_forever", *channel_record,
                 "blocked in ibv_get_cq_event with no event pending, no work on the device and "
                 "no other thread to post any: nothing can ever wake it");
}

void Checkers::cq_event_taken(State&, Tracked& cq) {
  ObjectChecks& c = cq.checks;
  ++c.cq_events_taken;
  c.used_with_events = true;
  c.drained_since_event = false;
  idle_polls_ = 0;
}

void Checkers::cq_events_acked(State& state, Tracked& cq, unsigned int count) {
  ObjectChecks& c = cq.checks;
  if (c.cq_events_acked + count > c.cq_events_taken) {
    report(state, "ack.cq_events_overacked", cq,
           "ibv_ack_cq_events(" + std::to_string(count) + ") with " +
               std::to_string(c.cq_events_taken - c.cq_events_acked) +
               " event(s) of this CQ unacknowledged: acks meant for another CQ? (libibverbs' "
               "destroy_cq then waits forever)");
  }
  c.cq_events_acked += count;
}

void Checkers::armed(State&, Tracked& cq) {
  ObjectChecks& c = cq.checks;
  c.arm_depth = cq.simulated ? depth(cq) : 0;
  c.polled_since_arm = false;
  c.drained_since_arm = false;
}

void Checkers::polled(State& state, Tracked& cq, int asked, int returned, const ibv_wc* wc) {
  ObjectChecks& c = cq.checks;
  c.polled_since_arm = true;
  if (returned == 0 && asked > 0) c.drained_since_event = c.drained_since_arm = true;
  // Failures are remembered per QP; a success only has to forget one, and
  // costs nothing while no failure is remembered (the usual poll).
  for (int i = 0; i < returned; ++i) {
    const bool failed = wc[i].status != IBV_WC_SUCCESS;
    if (!failed && remembered_failures_ == 0) continue;
    Tracked* qp = state.registry.find_qp(wc[i].qp_num);
    if (qp == nullptr) continue;
    ObjectChecks& q = qp->checks;
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
  if (depth(cq) == 0 && !provider::work_pending() && single_threaded())
    end_hung_run(state, "liveness.spinning", cq,
                 std::to_string(kSpinningPolls) +
                     " empty polls in a row with no work on the device and no other thread to "
                     "post any: no completion can ever arrive");
}

// ---- async events ---------------------------------------------------------------------

void Checkers::before_async_event_wait(State& state, ibv_context* context) {
  Tracked* record = state.registry.find(context);
  if (record == nullptr || !record->simulated) return;
  if (readable(context->async_fd) || nonblocking(context->async_fd)) return;
  if (single_threaded() && !provider::work_pending())
    end_hung_run(state, "liveness.blocked_forever", *record,
                 "blocked in ibv_get_async_event with no event pending, no work on the device "
                 "and no other thread to make a verbs call: nothing can ever wake it");
}

void Checkers::async_event_taken(State&, Tracked& element) {
  ++element.checks.async_taken;
  idle_polls_ = 0;
}

void Checkers::async_event_acked(State& state, Tracked* element) {
  if (element == nullptr) return;
  ObjectChecks& c = element->checks;
  if (c.async_acked >= c.async_taken) {
    report(state, "ack.async_overacked", *element,
           "ibv_ack_async_event for an event of this object that was not taken, or twice");
    return;
  }
  ++c.async_acked;
}

// ---- work requests -----------------------------------------------------------------------

void Checkers::check_poisoned(State& state, Tracked& qp, std::uint64_t wr_id, std::uint64_t length,
                              std::uint32_t opcode) {
  if (length != kPoison32 && opcode != kPoison32) return;
  report(state, "error.poisoned_field_used", qp,
         "work request " + std::to_string(wr_id) + " carries 0xa5a5a5a5 (a " +
             (opcode == kPoison32 ? "opcode" : "length") +
             " taken from an error completion, where ibv_poll_cq(3) leaves it undefined)");
}

void Checkers::count_post(State& state, Tracked& qp) {
  ObjectChecks& c = qp.checks;
  if (c.error_polled && ++c.posts_after_error == kPostsAfterError)
    report(state, "error.post_to_qp_in_err", qp,
           std::to_string(kPostsAfterError) +
               " posts after one of its error completions was polled: the QP is in ERR and "
               "flushes everything until it is reset (ibv_modify_qp to RESET) or replaced");
}

void Checkers::send_built(State& state, Tracked& qp, unsigned int send_flags) {
  ObjectChecks& c = qp.checks;
  idle_polls_ = 0;
  if ((send_flags & IBV_SEND_SIGNALED) || c.sq_sig_all) {
    c.unsignaled_run = 0;
  } else if (++c.unsignaled_run >= c.max_send_wr && c.max_send_wr > 0) {
    report(state, "resource.unsignaled_sends_fill_queue", qp,
           std::to_string(c.unsignaled_run) + " unsignaled sends in a row on a send queue of " +
               std::to_string(c.max_send_wr) +
               ": a send slot is freed only by a polled completion of a later signaled WR, so "
               "the queue fills and ibv_post_send fails with ENOMEM");
  }
  count_post(state, qp);
}

void Checkers::send_posted(State& state, Tracked& qp, const ibv_send_wr* list) {
  for (const ibv_send_wr* wr = list; wr != nullptr; wr = wr->next) {
    for (int i = 0; i < wr->num_sge && wr->sg_list != nullptr; ++i)
      check_poisoned(state, qp, wr->wr_id, wr->sg_list[i].length, 0);
    check_poisoned(state, qp, wr->wr_id, 0, static_cast<std::uint32_t>(wr->opcode));
    send_built(state, qp, wr->send_flags);
  }
}

void Checkers::recv_posted(State& state, Tracked& object, const ibv_recv_wr* list) {
  idle_polls_ = 0;
  for (const ibv_recv_wr* wr = list; wr != nullptr; wr = wr->next) {
    for (int i = 0; i < wr->num_sge && wr->sg_list != nullptr; ++i)
      check_poisoned(state, object, wr->wr_id, wr->sg_list[i].length, 0);
    count_post(state, object);
  }
}

void Checkers::qp_modified(State&, Tracked& qp, const ibv_qp_attr& attr, int mask) {
  if ((mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_RESET) {
    qp.checks.error_polled = false;
    qp.checks.posts_after_error = 0;
    qp.checks.unsignaled_run = 0;
  }
}

// ---- outcomes the application reports ------------------------------------------------

void Checkers::outcome_reported(State& state, Tracked& qp, std::uint64_t wr_id, bool success) {
  if (!success) return;
  auto it = qp.checks.failed.find(wr_id);
  if (it == qp.checks.failed.end()) return;
  report(state, "error.failure_reported_as_success", qp,
         "work request " + std::to_string(wr_id) +
             " was reported a success, but its completion was " + ibv_wc_status_str(it->second) +
             " (a flushed WR did not happen)");
}

// ---- objects ------------------------------------------------------------------------------

void Checkers::qp_created(State& state, Tracked& qp, std::uint32_t max_send_wr,
                          std::uint32_t max_recv_wr, bool sq_sig_all) {
  qp.checks.max_send_wr = max_send_wr;
  qp.checks.max_recv_wr = max_recv_wr;
  qp.checks.sq_sig_all = sq_sig_all;
  // F16: every WR of every QP on a CQ may be outstanding at once.
  for (ibv_cq* cq : {qp.send_cq, qp.recv_cq}) {
    Tracked* cq_record = state.registry.find(cq);
    if (cq_record == nullptr) continue;
    std::uint64_t outstanding = 0;
    for (Tracked* other : state.registry.all(ObjectKind::qp)) {
      if (other->send_cq == cq) outstanding += other->checks.max_send_wr;
      if (other->recv_cq == cq) outstanding += other->checks.max_recv_wr;
    }
    if (outstanding > static_cast<std::uint64_t>(cq->cqe))
      report(state, "resource.cq_too_small", *cq_record,
             "its QPs can have " + std::to_string(outstanding) +
                 " work requests outstanding (max_send_wr + max_recv_wr) but it holds " +
                 std::to_string(cq->cqe) + " completions: it overflows when they all complete");
    if (qp.send_cq == qp.recv_cq) break;
  }
}

void Checkers::destroying(State& state, Tracked& object) {
  const ObjectChecks& c = object.checks;
  if (object.ref.kind == ObjectKind::cq && c.cq_events_taken != c.cq_events_acked)
    report(state, "ack.cq_events_unacked_at_destroy", object,
           "ibv_destroy_cq with " + std::to_string(c.cq_events_taken) +
               " completion event(s) taken and " + std::to_string(c.cq_events_acked) +
               " acknowledged: libibverbs waits here forever (ibv_ack_cq_events each event "
               "first)");
  if (c.async_taken != c.async_acked)
    report(state, "ack.async_unacked_at_destroy", object,
           "destroyed with " + std::to_string(c.async_taken) + " async event(s) taken and " +
               std::to_string(c.async_acked) +
               " acknowledged: libibverbs waits here forever (ibv_ack_async_event each first)");
}

void Checkers::destroy_refused(State& state, Tracked& object, int error) {
  if (error != EBUSY) return;
  const ObjectChecks& c = object.checks;
  if (c.cq_events_taken != c.cq_events_acked || c.async_taken != c.async_acked) return;
  report(state, "resource.destroy_order", object,
         "destroy refused with EBUSY: objects that depend on it (QPs on a CQ or SRQ, children "
         "of a PD, CQs of a channel) must be destroyed first");
}

void Checkers::closed_with_children(State& state, Tracked& context, const std::string& names) {
  report(state, "resource.destroy_order", context,
         "ibv_close_device with objects of the context still alive (" + names +
             "): ibv_close_device(3) does not release them; destroy them first");
}

void Checkers::forget(Tracked& object) {
  remembered_failures_ -= object.checks.failed.size();
}

void Checkers::exiting(State& state) {
  std::string leaked;
  Tracked* first = nullptr;
  for (ObjectKind kind : {ObjectKind::qp, ObjectKind::srq, ObjectKind::cq, ObjectKind::ah,
                          ObjectKind::mr, ObjectKind::pd, ObjectKind::channel, ObjectKind::context})
    for (Tracked* object : state.registry.all(kind)) {
      leaked += (leaked.empty() ? "" : ", ") + object->name();
      if (first == nullptr) first = object;
    }
  if (first != nullptr) report(state, "resource.leak_at_exit", *first, "alive at exit: " + leaked);
}

}  // namespace verbfault::checkers

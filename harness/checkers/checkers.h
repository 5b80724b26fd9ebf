// The runtime checks: they watch the application through the interposer's
// hooks and report each mistake once per object, with its stable id, the
// object, the trace position and the line that replays the run
// (check_catalogue.h lists them). On whenever the harness is (a seed, plan
// or trace given, or a Session open); VERBFAULT_CHECKS selects them.
//
// Owner: the interposer; every call happens under the interposer lock
// (State::mutex), with the state of each object kept in its Tracked record.
#pragma once

#include "check_catalogue.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace verbfault::interposer {
class State;
struct Tracked;
}  // namespace verbfault::interposer

namespace verbfault::checkers {

// Exit status of a run the liveness checks ended.
inline constexpr int kHangExit = 122;

struct Finding {
  std::string check;                 // stable id, e.g. "ack.cq_events_unacked_at_destroy"
  std::string object;                // "cq#0"
  std::string message;               // one line
  std::uint64_t trace_position = 0;  // records written before it
  std::string replay;                // environment + command that replays the run
};

using interposer::State;
using interposer::Tracked;

class Checkers {
 public:
  void configure(CheckSelection selection, std::string findings_file);
  // A Session: findings are kept apart from the environment's run.
  void restart() {
    findings_.clear();
    reported_.clear();
    idle_polls_ = 0;
  }
  const std::vector<Finding>& findings() const { return findings_; }

  // ---- completion events ----
  // Before ibv_get_cq_event looks for an event on `channel` (it waits
  // unless the fd is non-blocking). May end the run (liveness).
  void before_cq_event_wait(State& state, ibv_comp_channel* channel);
  void cq_event_taken(State& state, Tracked& cq);
  void cq_events_acked(State& state, Tracked& cq, unsigned int count);
  void armed(State& state, Tracked& cq);
  void polled(State& state, Tracked& cq, int asked, int returned, const ibv_wc* wc);

  // ---- async events ----
  void before_async_event_wait(State& state, ibv_context* context);
  void async_event_taken(State& state, Tracked& element);
  void async_event_acked(State& state, Tracked* element);

  // ---- work requests ----
  void send_posted(State& state, Tracked& qp, const ibv_send_wr* list);
  // One WR of the ibv_wr_* API, at its builder (its data comes later).
  void send_built(State& state, Tracked& qp, unsigned int send_flags);
  void recv_posted(State& state, Tracked& object, const ibv_recv_wr* list);
  void qp_modified(State& state, Tracked& qp, const ibv_qp_attr& attr, int mask);

  // ---- outcomes the application reports (Session::report_outcome) ----
  void outcome_reported(State& state, Tracked& qp, std::uint64_t wr_id, bool success);

  // ---- objects ----
  void qp_created(State& state, Tracked& qp, std::uint32_t max_send_wr, std::uint32_t max_recv_wr,
                  bool sq_sig_all);
  // Before the provider's destroy of a CQ, QP or SRQ.
  void destroying(State& state, Tracked& object);
  void destroy_refused(State& state, Tracked& object, int error);
  // ibv_close_device while these objects of the context are alive.
  void closed_with_children(State& state, Tracked& context, const std::string& names);
  // An object leaving the registry (destroyed, or gone with its context).
  void forget(Tracked& object);
  // At the end of the run.
  void exiting(State& state);

 private:
  bool on(std::string_view id) const { return selection_.enabled(id); }
  void report(State& state, std::string_view id, Tracked& object, std::string message);
  // Reports a hang and ends the run (exit status kHangExit); returns only
  // when that check is switched off.
  void end_hung_run(State& state, std::string_view id, Tracked& object, std::string message);
  void check_cq_before_wait(State& state, Tracked& cq);
  void check_poisoned(State& state, Tracked& qp, std::uint64_t wr_id, std::uint64_t length,
                      std::uint32_t opcode);
  std::string replay_line(State& state) const;
  // One more WR posted to `qp` (F18 counts the ones after an error).
  void count_post(State& state, Tracked& qp);

  CheckSelection selection_ = CheckSelection::parse("", "");
  std::string findings_file_;
  std::vector<Finding> findings_;
  std::set<std::pair<std::string, std::string>> reported_;  // (id, object): once each
  std::uint64_t idle_polls_ = 0;           // empty polls since the last sign of progress
  std::uint64_t remembered_failures_ = 0;  // entries of every QP's ObjectChecks::failed
};

}  // namespace verbfault::checkers

// The runtime checks, an observer of the interposer's calls: they report
// each mistake of the application once per object, with its stable id, the
// object, the trace position and the line that replays the run
// (check_catalogue.h lists them). On whenever the harness is (a seed, plan
// or trace given, or a Session open); VERBFAULT_CHECKS selects them.
//
// The checks keep what they remember of each object in their own table,
// indexed by the object's slot (object_checks.h), and read the objects
// only through record::Object. What they need of the run (the trace
// position, the replay line, completions the harness holds back, ending a
// hung run) they ask of their Host.
//
// Owner: the interposer, which calls every member under its lock.
#pragma once

#include "call_record.h"
#include "verbfault/exit_status.h"
#include "check_catalogue.h"
#include "object.h"
#include "object_checks.h"
#include "window.h"
#include "verbfault/session.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace verbfault::checkers {

using record::Object;

// What the checks may ask of the run they watch (the interposer).
class Host {
 public:
  virtual std::uint64_t trace_position() const = 0;
  // The line that replays the run (environment + command).
  virtual std::string replay_line() const = 0;
  // Completions the harness holds back from the application on `cq`.
  virtual std::size_t held_completions(const Object& cq) const = 0;
  // Whether no other thread of the program can make a verbs call (so only
  // the device can still change anything): with the thread scheduler,
  // every other thread ended or waits for something only a thread can do;
  // without it, the process has one thread.
  virtual bool alone() const = 0;
  // What every other thread of the program is doing, one "  thread N: ..."
  // line each, the calling one described by `doing`; empty when there is
  // one thread (or no scheduler to ask).
  virtual std::string threads_report(std::string_view doing) const = 0;
  virtual void record(const record::CallRecord& record) = 0;
  // Ends the run now with `status` (a hang): the trace and the summary are
  // written first. The caller holds the interposer lock.
  [[noreturn]] virtual void end_run(int status) = 0;

 protected:
  ~Host() = default;
};

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

  // ---- objects ----
  // A new object in `object.slot` (it stays in place until forget()).
  void object_added(const Object& object);
  // A QP was created; the capacity of its CQs is judged at its first post.
  void qp_created(Host& host, const Object& qp, std::uint32_t max_send_wr,
                  std::uint32_t max_recv_wr, bool sq_sig_all);
  // Before the provider's destroy of a CQ, QP or SRQ.
  void destroying(Host& host, const Object& object);
  void destroy_refused(Host& host, const Object& object, int error);
  // ibv_close_device while these objects of the context are alive.
  void closed_with_children(Host& host, const Object& context, const std::string& names);
  // An object leaving the registry (destroyed, or gone with its context).
  void forget(const Object& object);
  // At the end of the run: what is still alive.
  void exiting(Host& host);

  // ---- completion events ----
  // Before ibv_get_cq_event looks for an event on `channel` (it waits
  // unless the fd is non-blocking). May end the run (liveness).
  void before_cq_event_wait(Host& host, const Object& channel);
  // A thread starts or ends a wait in ibv_get_cq_event on `channel` (after
  // before_cq_event_wait; the end whatever the wait gave).
  void cq_event_wait_begins(const Object& channel);
  void cq_event_wait_ended(const Object& channel);
  // A thread of the program joins another (pthread_join).
  void joining(Host& host);
  void cq_event_taken(Host& host, const Object& cq);
  void cq_events_acked(Host& host, const Object& cq, unsigned int count);
  // A successful ibv_req_notify_cq.
  void armed(Host& host, const Object& cq);
  // A poll: `completions` are what the application sees.
  void polled(Host& host, const Object& cq, int asked, const record::Completions& completions);

  // ---- async events ----
  void before_async_event_wait(Host& host, const Object& context);
  void async_event_taken(const Object& element);
  void async_event_acked(Host& host, const Object* element);

  // ---- work requests ----
  void send_posted(Host& host, const Object& qp, const ibv_send_wr* list);
  // One WR of the ibv_wr_* API, at its builder (its data comes later).
  void send_built(Host& host, const Object& qp, unsigned int send_flags);
  void recv_posted(Host& host, const Object& object, const ibv_recv_wr* list);
  void qp_modified(const Object& qp, const ibv_qp_attr& attr, int mask);

  // ---- the hang watchdog (interposer/hang_watchdog.h) ----
  // The run is hung: reports liveness.hang on `object` (what the threads
  // wait on) with what every thread waits for (`waits`, one "  thread N:
  // ..." line each) and ends the run (exit_status::kHang). Returns only when that
  // check is off.
  void hung(Host& host, const Object& object, std::string message, const std::string& waits);
  bool enabled(std::string_view id) const { return on(id); }
  // The checks switched on that need the simulated device's view
  // (check_catalogue.h), "a, b, c": off on a real provider.
  std::string needing_simulated_device() const;

  // ---- the connection manager (interposer/cm_faults.cpp) ----
  // Every thread waits and one waits in rdma_get_cm_event on a file no
  // event can come to (`file`: what it holds): liveness.blocked_forever on
  // its first id. The caller ends the run.
  void cm_event_never_comes(Host& host, const Object& id, const std::string& file);
  // rdma_destroy_id of `id` while the QP it connected (`qp`) is alive.
  void cm_id_destroyed_with_qp(Host& host, const Object& id, const Object& qp);
  // rdma_destroy_id of `id` with `events` ("ADDR_ERROR, ...": `count` of
  // them) taken and not acknowledged: librdmacm waits for their acks. Ends
  // the run (exit_status::kHang) when this thread is alone; else reports it.
  void cm_destroy_id_unacked(Host& host, const Object& id, unsigned count,
                             const std::string& events);
  // rdma_ack_cm_event of an event of `id` (`event`: "established") that was
  // acknowledged already.
  void cm_event_acked_twice(Host& host, const Object& id, std::string_view event);
  // A CM message's private data longer than the message carries.
  void cm_private_data_too_long(Host& host, const Object& id, std::string_view call,
                                unsigned length, unsigned room);

  // ---- outcomes the application reports (Session::report_outcome) ----
  void outcome_reported(Host& host, const Object& qp, std::uint64_t wr_id, bool success);

 private:
  // What the checks know of the object in one slot.
  struct Watched {
    const Object* object = nullptr;  // nullptr: the slot is free
    ObjectChecks checks;
  };
  ObjectChecks& of(const Object& object) { return slots_[object.slot].checks; }
  // The live objects of `kind`, in creation order.
  std::vector<const Object*> all(ObjectKind kind) const;

  bool on(std::string_view id) const { return selection_.enabled(id); }
  void report(Host& host, std::string_view id, const Object& object, std::string message);
  // Reports a hang and ends the run (exit status exit_status::kHang); returns only
  // when that check is switched off. With other threads, lists what each
  // does, the calling one `doing` ("ibv_get_cq_event on channel#0").
  void end_hung_run(Host& host, std::string_view id, const Object& object, std::string message,
                    std::string_view doing);
  // Before a hang is told: what made it, where the checks can say.
  void report_causes_of_hang(Host& host);
  // Whether a destroy of `object` (a real provider's) with `taken` events
  // and `acked` acknowledgements waits forever in libibverbs: no other
  // thread can still give the missing acks.
  bool destroy_never_returns(Host& host, const Object& object, std::uint64_t taken,
                             std::uint64_t acked) const;
  // The watched channel whose verbs handle is `handle` (nullptr: none).
  const Object* channel_object(const void* handle) const;
  // `another_armed`: a CQ of the same channel is armed; `event_pending`:
  // the channel holds an event, so the call returns it without waiting.
  void check_cq_before_wait(Host& host, const Object& cq, bool another_armed, bool event_pending);
  // Reports completions an armed simulated CQ held when it was armed and
  // that no poll has taken since: no event announces them. A mistake only
  // when no other thread can poll them (the caller knows).
  void report_unannounced(Host& host, const Object& cq);
  void check_poisoned(Host& host, const Object& qp, std::uint64_t wr_id, std::uint64_t length,
                      std::uint32_t opcode);
  // One more WR posted to `qp` (F18 counts the ones after an error).
  void count_post(Host& host, const Object& qp);
  void posted_after_disconnect(Host& host, const Object& qp);
  // F16 (resource.cq_too_small) for the CQs of `qp`.
  void judge_cq_capacity(Host& host, const Object& qp);
  // The completions a simulated CQ holds, the harness's held ones included.
  std::size_t depth(const Host& host, const Object& cq) const;
  // The run reached `window` at `object`: one trace record the first time
  // (windows.h).
  void reached(Host& host, Window window, const Object& object);

  CheckSelection selection_ = CheckSelection::parse("", "");
  std::string findings_file_;
  std::vector<Finding> findings_;
  std::vector<Watched> slots_;              // by Object::slot
  std::vector<const Object*> waiting_cqs_;  // before_cq_event_wait's (kept allocated)
  std::set<std::pair<std::string, std::string>> reported_;  // (id, object): once each
  std::uint64_t idle_polls_ = 0;           // empty polls since the last sign of progress
  std::uint32_t windows_reached_ = 0;      // bit per Window: marked in the trace once
  std::uint64_t remembered_failures_ = 0;  // entries of every QP's ObjectChecks::failed
};

}  // namespace verbfault::checkers

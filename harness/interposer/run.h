// The interposer's process-wide state and the one lock that guards it.
#pragma once

#include "call_record.h"
#include "checkers.h"
#include "config.h"
#include "fault_engine.h"
#include "injections.h"
#include "post_decisions.h"
#include "scheduler.h"
#include "interposer.h"
#include "object_registry.h"
#include "trace.h"

#include <array>
#include <atomic>
#include <mutex>

#include <sys/types.h>
#include <unistd.h>
#include <string_view>

namespace verbfault::interposer {

using engine::Decision;
using engine::Opportunity;
using engine::PostedWr;
using engine::PostPlan;
using engine::Site;
namespace inject = engine::inject;

class Run;
void wrap_fd(Tracked& tracked, int& fd);

// The call-site faults of a call on `tracked` (interposer.h before_call),
// with the lock held; the lock is released while a fired fault is
// injected, and `tracked` found again after (nullptr: gone meanwhile).
int call_site_faults(Run& run, std::unique_lock<record::RunLock>& lock, Tracked*& tracked,
                     std::optional<Verb> verb, OnDeadDevice on_dead);

// Whether the process's run is active (process_run().active()), for the
// trampolines' fast paths and the libc wrappers, which test it before they
// reach for the run: set before main (the library's constructor) and by a
// Session, read without a lock.
extern std::atomic<bool> g_active;

// One run of the harness: the configuration it was made with (a value),
// and what it owns: the lock, the object registry, the fault engine and
// the observers (the trace, the checks). The process has one, made by
// process_run() (interposer.h) from the environment, which also hooks it
// into the process (exit, fatal signals, fork, the thread scheduler); a
// unit test makes its own from a Config and calls the interposer's
// functions with it.
class Run final : public checkers::Host, public engine::Recorder {
 public:
  // Opens the trace, configures the engine and the checks; throws
  // std::runtime_error (one line) when the trace cannot be opened.
  explicit Run(Config config);
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // Whether the harness does anything beyond routing in this run: a plan,
  // a seed or a trace was asked for, or a Session is open. Read without
  // the lock (relaxed): set before the run's calls begin and by a Session.
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // The interposer lock (record/run_lock.h): guards everything below.
  // Taken before the simulated device's Fabric::mutex, never after it; the
  // provider's own locks are taken by the calls made under it.
  // Held across the provider's non-blocking fast-path ops only; never
  // across a call that may block (the simulated device's waits) or call
  // back into the front door (docs/architecture.md, "Locking").
  record::RunLock mutex;
  Config config;
  engine::FaultEngine engine{mutex, *this};
  ObjectRegistry registry;
  observers::Trace trace;
  checkers::Checkers checkers;
  // The thread scheduler (threads/scheduler): started by the process's
  // run when VERBFAULT_THREADS asks (thread_calls::start), which hands the
  // libc wrappers a pointer to it; guarded by its own lock, taken before
  // this run's `mutex` when both are (docs/architecture.md, "Locking").
  // Mutable as a mutex is: the const questions of checkers::Host (alone,
  // threads_report) take its lock.
  mutable scheduler::Scheduler scheduler;

  // Adds a new object to the registry and tells the engine and the
  // observers (lock held).
  Tracked& add_object(ObjectKind kind, const void* handle, ObjectRef context, bool simulated);
  // Removes it from the registry, the engine and the checks (lock held).
  void remove_object(Tracked& object);
  // Appends a record to the trace (lock held).
  void record(const record::CallRecord& record) override { trace.append(record); }
  // What the checks ask of the run (checkers::Host; lock held).
  std::uint64_t trace_position() const override { return trace.records(); }
  std::string replay_line() const override;
  std::size_t held_completions(const record::Object& cq) const override {
    return engine.faults(cq).held.size();
  }
  [[noreturn]] void end_run(int status) override;
  bool alone() const override;
  // Whether another application thread could still acknowledge events,
  // for a destroy in the simulated device (provider::set_ack_possible).
  static bool others_may_ack();
  // Whether the calling thread may block in the simulated device for
  // another process: no other application thread could run meanwhile.
  // Called by the device under its own lock: asks it nothing.
  static bool may_block_in_device();
  // Without the thread scheduler: whether every application thread waits
  // in a call for fds or accept(2) (thread_calls::outside_waiters). Reads
  // /proc/self/stat.
  static bool every_thread_waits_outside();
  // Puts the simulated device's timing notes (provider::take_timing_notes)
  // in the trace as events of `object`, and on stderr. Lock held.
  void record_timing_notes(record::ObjectId object);
  std::string threads_report(std::string_view doing) const override;
  // The WRs of the post being traced (scratch, kept allocated).
  std::vector<record::WrSummary> posted_wrs;

  // Completions with their QPs' names, for a record (lock held): valid
  // until the next call.
  record::Completions completions(const ibv_wc* wc, std::size_t count);
  // A Session: its plan and seed replace the environment's until it ends.
  void begin_session(const Plan& plan, std::uint64_t seed, bool draw_freedoms);
  void end_session();

  // The end of the run: what is still alive (check_leaks: only when the
  // lock is free), coverage, trace hash; idempotent.
  void finish(bool check_leaks = true) noexcept;
  // The end of the run from a fatal signal's handler, async-signal-safe
  // (no stdio, no allocation, no lock): coverage, the end-of-run line
  // written with write(2), the trace left in its journal; idempotent with
  // finish().
  void finish_on_signal() noexcept;

  // The process's fork hooks (run.cpp, installed at load): a fork(2) is
  // counted in the parent, and the child follows its own trace.
  void count_fork() noexcept { ++forks_; }
  // In the child of a fork(2): its own trace, its inherited objects not
  // its own to release.
  void become_forked_child() noexcept;

 private:
  friend Run& process_run();
  friend Run* make_process_run();
  // The process's run only: installs its hooks (fatal signals, the thread
  // scheduler with `thread` as its thread 0, the hang watchdog) and makes
  // the trampolines' g_active follow this run. Called on a thread of its
  // own (make_process_run); `thread` then calls enter_as_process_thread().
  void enter_process(pthread_t thread, pid_t tid);
  void enter_as_process_thread();
  // The end-of-run line for verbfault run (VERBFAULT_SUMMARY), with the
  // trace's `records`; async-signal-safe.
  void write_summary(std::uint64_t records) const noexcept;
  // The end-of-run line with the trace's `records` (finish() and
  // finish_on_signal() alike): a forked child's, the summary file's, or
  // the seed and trace hash; async-signal-safe.
  void say_end(std::uint64_t records) const noexcept;
  // fork(2)s of this process so far (counted before each, so the child sees
  // its own number); the pid of the process this one was forked from (0:
  // not a forked child). Written by the forking thread and in the child
  // before it runs anything else.
  std::size_t forks_ = 0;
  pid_t forked_from_ = 0;
  std::vector<record::ObjectId> completion_qps_;  // scratch of completions(), kept allocated
  // finish() ran: it runs once, whichever comes first of exit, a fatal
  // signal (on any thread, while another may be exiting) or end_run.
  std::atomic<bool> finished_{false};
  // config.active, or true while a Session is open.
  std::atomic<bool> active_{false};
};

}  // namespace verbfault::interposer

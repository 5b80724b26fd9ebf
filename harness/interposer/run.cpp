// The interposer's state: configuration from the environment, the trace,
// and the end of the run (coverage, trace hash) at exit or on a fatal
// signal.
#include "run.h"

#include "fork_server.h"
#include "libc.h"
#include "process_threads.h"
#include "signal_safe_line.h"

#include "thread_calls.h"

#include "conditions.h"
#include "hang_watchdog.h"
#include "observation.h"
#include "replay.h"
#include "scheduler.h"
#include "thread_world.h"
#include "trace_path.h"
#include "trampolines.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <fstream>

namespace verbfault::interposer {

std::atomic<bool> g_active{false};

namespace {

const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM, SIGINT};

// The process's run as it is, for the process hooks (exit, fork, fatal
// signals): unlike process_run(), never the entry that makes a waiting
// fork server serve (a program's exit or fork(2) is not its first verbs
// call).
Run*& the_process_run();

// Says the end of the run the async-signal-safe way (Run::finish_on_signal),
// then dies of the same signal.
void on_fatal_signal(int signal) {
  the_process_run()->finish_on_signal();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// The words of this process's command line.
std::vector<std::string> command_words() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> words;
  for (std::string word; std::getline(in, word, '\0');) words.push_back(word);
  return words;
}

void at_exit() {
  the_process_run()->finish();
}

}  // namespace

namespace {

// Runs `work` on a thread of its own and waits for it: what it allocates
// comes from that thread's malloc arena, not the main arena, where the
// program's own allocations go. So the harness's making of its run (the
// plan parsed, the trace opened, the scheduler's tables) moves none of
// the program's addresses, which a trace shows when an application uses
// pointers as wr_id: the program's heap is the same whether the run was
// made at load or, in a fork server's child, at the first verbs call
// (fork_server.h), and whatever the plan's size. Inline when no thread
// can be made.
template <class Work>
void on_a_thread_of_its_own(Work& work) {
  auto trampoline = [](void* argument) -> void* {
    (*static_cast<Work*>(argument))();
    return nullptr;
  };
  pthread_t thread;
  if (libc::real().create(&thread, nullptr, trampoline, &work) != 0) {
    work();
    return;
  }
  libc::real().join(thread, nullptr);
}

// The process hooks, installed once, at load, whatever the run: at exit
// and at fork(2) the process's run of the moment (a fork server's child
// replaces the one made at load) says its end or follows the child.
// Installed before the program's static constructors register theirs,
// as a run from exec always had them.
void install_process_hooks() {
  std::atexit(at_exit);
  // A forked child is a process of its own: its trace goes beside the
  // parent's (record::forked_trace_path, named by the parent's count of
  // forks), not over the parent's journal.
  pthread_atfork([] { the_process_run()->count_fork(); }, nullptr,
                 [] { the_process_run()->become_forked_child(); });
  pthread_atfork(nullptr, nullptr, [] { thread_calls::after_fork_in_child(); });
}

}  // namespace

// The process's run as the library's constructor makes it: from the
// environment, hooked into the process.
Run* make_process_run() {
  announce_started();
  Run* made = nullptr;
  std::string failure;
  const pthread_t caller = pthread_self();
  const auto caller_tid = static_cast<pid_t>(gettid());
  auto make = [&] {
    try {
      made = new Run(config_from_environment());
      made->enter_process(caller, caller_tid);
    } catch (const std::exception& error) {
      failure = error.what();
    }
  };
  on_a_thread_of_its_own(make);
  if (made == nullptr) {
    std::fprintf(stderr, "verbfault: %s\n", failure.c_str());
    std::_Exit(exit_status::kUsage);
  }
  made->enter_as_process_thread();
  return made;
}

namespace {

// Never destroyed: calls may still arrive from other threads or from
// other libraries' destructors after exit() began. Replaced once, in a
// fork server's child (fork_server.h), before the child's first call.
Run*& the_process_run() {
  static Run* run = [] {
    install_process_hooks();
    Run* made = make_process_run();
    arm_fork_server();
    return made;
  }();
  return run;
}

}  // namespace

Run& process_run() {
  if (g_fork_server_waiting.load(std::memory_order_relaxed)) [[unlikely]] {
    Run*& run = the_process_run();
    const pid_t before = getpid();
    serve_seeds();
    // In a child that took a request: its seed's run, as the constructor
    // of a process started with that environment would have made it.
    if (getpid() != before) run = make_process_run();
  }
  return *the_process_run();
}

Run::Run(Config configuration) : config(std::move(configuration)) {
  if (config.trace_path) trace.open(*config.trace_path);
  engine.configure(config.plan, config.seed, config.process);
  checkers.configure(config.checks, config.findings_file);
  active_ = config.active;
}

void Run::enter_process(pthread_t thread, pid_t tid) {
  g_active = active();
  provider::set_wait_permission(&Run::may_block_in_device);
  provider::set_ack_possible(&Run::others_may_ack);
  if (!g_active) return;
  if (config.draw_freedoms) provider::set_freedom_seed(config.seed);
  if (!config.seed_given)
    std::fprintf(stderr, "verbfault: seed %llu (drawn; VERBFAULT_SEED=%llu replays it)\n",
                 static_cast<unsigned long long>(config.seed),
                 static_cast<unsigned long long>(config.seed));
  // The hang watchdog (hang_watchdog.h) looks from the scheduler's
  // watchdog thread, or from one of its own without the scheduler.
  const bool watch_hangs = config.hang_after_ns != 0 && checkers.enabled("liveness.hang");
  hang::configure(watch_hangs ? config.hang_after_ns : 0);
  if (config.threads)
    thread_calls::start_for(scheduler, *config.threads, thread, tid);
  else if (watch_hangs)
    thread_calls::start_watchdog();
  for (int signal : kFatalSignals) {
    struct sigaction current {};
    // An application's own handler stays in charge.
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
      std::signal(signal, on_fatal_signal);
  }
}

void Run::enter_as_process_thread() {
  if (scheduler.running()) scheduler.enter_as_started_thread();
}

void Run::begin_session(const Plan& plan, std::uint64_t seed, bool draw_freedoms) {
  provider::set_freedom_seed(draw_freedoms ? std::optional(seed) : std::nullopt);
  std::lock_guard lock(mutex);
  engine.configure(plan, seed, config.process);
  registry.restart_names();
  trace.start_capture();
  checkers.restart();
  active_ = true;
  g_active = true;
  install_all_trampolines();  // contexts opened while the harness was off
}

void Run::end_session() {
  provider::set_freedom_seed(config.active && config.draw_freedoms ? std::optional(config.seed)
                                                                   : std::nullopt);
  std::lock_guard lock(mutex);
  trace.stop_capture();
  engine.configure(config.plan, config.seed, config.process);
  active_ = config.active;
  g_active = config.active;
}

Tracked& Run::add_object(ObjectKind kind, const void* handle, ObjectRef context, bool simulated) {
  // A provider may reuse an address after destroy: the new object takes
  // over the address under its own name.
  if (Tracked* previous = registry.find(handle)) remove_object(*previous);
  Tracked& tracked = registry.add(kind, handle, context, simulated);
  hang::progressed();
  trace.object_added(tracked.id());
  tracked.faults = &engine.object_added(tracked);
  checkers.object_added(tracked);
  return tracked;
}

void Run::remove_object(Tracked& object) {
  hang::progressed();
  checkers.forget(object);
  engine.object_removed(object);
  registry.remove(object.handle);
}

std::string Run::replay_line() const {
  if (const char* line = std::getenv("VERBFAULT_REPRODUCE")) return line;  // from verbfault run
  return engine::environment_line({engine.seed(),
                                   {},
                                   engine.plan().rules,
                                   engine::replay_settings(),
                                   engine::threads_setting(),
                                   command_words()});
}

namespace {

// The process's threads but those of the application blocked in accept(2)
// or a receive on a socket (thread_calls::outside_waiters).
int threads_not_waiting_outside() {
  return process_thread_count() - thread_calls::outside_waiters();
}

}  // namespace

bool Run::alone() const {
  if (scheduler.running()) return scheduler.others_idle();
  // Without the scheduler: the process has one thread, and those the
  // simulated device runs itself.
  return process_thread_count() == 1 + provider::device_threads() + thread_calls::harness_threads();
}

bool Run::may_block_in_device() {
  // Bounded: the device asks under its own lock, which the scheduler takes
  // under the scheduler's (advance_device).
  if (thread_calls::scheduling())
    return thread_calls::sched().others_idle(/*bounded=*/true, /*outside_waits_idle=*/true);
  // The device asks only once its service thread runs: the application's
  // one thread and that one; its threads blocked in a wait for fds or in
  // accept(2) make no verbs call until the world outside wakes them
  // (libfabric's name server thread waits in accept for the whole run).
  return threads_not_waiting_outside() == 2 + thread_calls::harness_threads();
}

bool Run::every_thread_waits_outside() {
  // Without the scheduler only (its decider marks the device itself).
  return threads_not_waiting_outside() ==
         provider::device_threads() + thread_calls::harness_threads();
}

bool Run::others_may_ack() {
  // Asked by the device under its own lock, as may_block_in_device.
  if (thread_calls::scheduling()) return !thread_calls::sched().others_idle(true);
  // The application's threads besides the caller: all but the caller, the
  // device's service thread (a destroy comes after an open) and the
  // harness's own.
  return process_thread_count() > 2 + thread_calls::harness_threads();
}

void Run::record_timing_notes(record::ObjectId object) {
  for (const std::string& note : provider::take_timing_notes()) {
    const std::uint64_t position = trace.records();
    record(record::CallRecord(object).add("event", "timing").add("what", note));
    std::fprintf(stderr, "verbfault: not deterministic from trace record %llu: %s\n",
                 static_cast<unsigned long long>(position), note.c_str());
  }
}

std::string Run::threads_report(std::string_view doing) const {
  return scheduler.threads_report(doing);
}

void Run::end_run(int status) {
  finish(/*check_leaks=*/false);  // the lock is the caller's: no leak check
  std::fflush(nullptr);
  std::_Exit(status);
}

record::Completions Run::completions(const ibv_wc* wc, std::size_t count) {
  if (completion_qps_.size() < count) completion_qps_.resize(count);
  for (std::size_t i = 0; i < count; ++i) completion_qps_[i] = registry.qp_id(wc[i].qp_num);
  return {wc, completion_qps_.data(), count};
}

void Run::finish(bool check_leaks) noexcept {
  // Not under the lock: a fatal signal may arrive while it is held.
  if (!active() || finished_.exchange(true)) return;
  {
    // What is still alive at the end (not when a signal interrupted a
    // holder of the lock).
    if (check_leaks) {
      std::unique_lock lock(mutex, std::try_to_lock);
      if (lock.owns_lock()) checkers.exiting(*this);
    }
  }
  const auto& fired = engine.fired();
  for (std::size_t i = 0; i < fired.size(); ++i) {
    if (fired[i] != 0) continue;
    const Rule& rule = engine.plan().rules[i];
    // Another process's rule: that process says whether it fired.
    if (!engine::for_process(rule, config.process)) continue;
    std::fprintf(stderr, "verbfault: coverage: rule #%zu (%s) never fired\n", i,
                 to_cli(rule).c_str());
  }
  trace.close();
  say_end(trace.records());
}

void Run::say_end(std::uint64_t records) const noexcept {
  if (forked_from_ != 0) {
    // Not the run's line: a sweep reads the last "seed S, trace hash H" as
    // the run's. `verbfault run` names the child's trace too.
    SignalSafeLine line;
    line.text("verbfault: forked child ").decimal(static_cast<std::uint64_t>(getpid()));
    line.text(" of ").decimal(static_cast<std::uint64_t>(forked_from_));
    line.text(": trace hash ").hex16(trace.hash()).text(" (").decimal(records).text(" records)");
    if (!trace.path().empty()) line.text(", trace ").text(trace.path());
    line.write_to(2);
    return;
  }
  // Under a multi-process `verbfault run` the line goes to it instead: it
  // prints each process's with the process's index and name.
  if (!config.summary_file.empty()) return write_summary(records);
  SignalSafeLine line;
  line.text("verbfault: seed ").decimal(config.seed).text(", trace hash ").hex16(trace.hash());
  line.text(" (").decimal(records).text(" records)").write_to(2);
}
void Run::become_forked_child() noexcept {
  // The only thread now; the lock may have been held by another thread of
  // the parent at fork(2), so it is not taken (nor was it for the parent's
  // journal before).
  forked_from_ = getppid();
  const std::string& parent_trace = trace.path();
  trace.restart_in_child(parent_trace.empty() ? std::string()
                                              : record::forked_trace_path(parent_trace, forks_));
  forks_ = 0;
  // What the parent had alive is the parent's to release.
  for (ObjectKind kind : {ObjectKind::context, ObjectKind::pd, ObjectKind::mr, ObjectKind::cq,
                          ObjectKind::srq, ObjectKind::qp, ObjectKind::ah, ObjectKind::channel})
    for (Tracked* tracked : registry.all(kind)) tracked->inherited_from_parent = true;
}

void Run::write_summary(std::uint64_t records) const noexcept {
  // One write(2) of one line with O_APPEND: the lines of processes that
  // end together do not mix. No stdio: a fatal signal may have got here.
  SignalSafeLine line;
  line.text("pid=").decimal(static_cast<std::uint64_t>(getpid()));
  line.text(" seed=").decimal(config.seed).text(" hash=").hex16(trace.hash());
  line.text(" records=").decimal(records);
  const int fd =
      ::open(config.summary_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;  // verbfault run says the process left no line
  line.write_to(fd);
  ::close(fd);
}

// signal-safety(7): only what a handler may do, whatever the interrupted
// thread held (the allocator's lock, stdio's, this run's mutex): reads of
// what is already there and write(2)s of fixed buffers. The trace is not
// rendered: its records are in the journal beside it (a shared mapping,
// whole up to the last record appended), which `verbfault run` renders
// once the process is gone and `verbfault trace` reads as it is; the empty
// polls still being counted are not a record yet and are not in it, nor
// in the hash and the count printed here.
void Run::finish_on_signal() noexcept {
  if (!active() || finished_.exchange(true)) return;
  const auto& fired = engine.fired();
  for (std::size_t i = 0; i < fired.size(); ++i) {
    if (fired[i] != 0 || !engine::for_process(engine.plan().rules[i], config.process)) continue;
    SignalSafeLine()
        .text("verbfault: coverage: rule #")
        .decimal(i)
        .text(" never fired")
        .write_to(2);
  }
  say_end(trace.journaled_records());
  if (!trace.path().empty())
    SignalSafeLine()
        .text("verbfault: the trace is in its journal, ")
        .text(trace.path())
        .text(".journal (verbfault run renders it; verbfault trace reads it)")
        .write_to(2);
}

// Reads the configuration before main: a bad variable stops the process
// before the application starts.
[[gnu::constructor]] static void initialize() {
  process_run();
}

}  // namespace verbfault::interposer

// The thread scheduler: under a seed, one application thread runs at a
// time, and which one runs next is a pure function of the seed and the
// schedule so far. So the same seed gives the same interleaving of a
// multi-threaded program's verbs calls, and a byte-identical trace
// (docs/threads-and-time.md).
//
// Threads hand a baton to each other at scheduling points: every verbs
// call, and the calls through which threads wait for or wake each other
// (the front door interposes them). A thread that has to wait (a mutex
// another thread holds, a condition variable, a join, a sleep, a channel
// with no event) is blocked here, never in the kernel, so the scheduler
// always knows who can run; when nobody can, it moves virtual time to the
// next deadline, or reports the deadlock.
//
// The strategy is PCT (Burckhardt, Kothari, Musuvathi, Nagarakatte,
// "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs",
// ASPLOS 2010): each thread gets a random priority, the highest-priority
// thread that can run runs, and at d-1 random steps the running thread
// drops below every other. A bug of depth d among n threads and k steps is
// found by one run with probability at least 1/(n k^(d-1)). A random walk
// (each step a uniform choice) is the alternative.
//
// Thread safety: every member is guarded by `lock_` (a spin lock: the
// scheduler is below every pthread function the program calls, so it
// cannot use them); a thread's `go` word is its futex, written by the
// thread handing it the baton.
#pragma once

#include "run_lock.h"

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::scheduler {

using ThreadId = std::uint32_t;
inline constexpr std::uint64_t kNoDeadline = ~std::uint64_t{0};

enum class Strategy : std::uint8_t { pct, random_walk };

struct Options {
  std::uint64_t seed = 0;
  Strategy strategy = Strategy::pct;
  // PCT's d: d - 1 priority change points.
  std::uint32_t depth = 3;
  // PCT's k: the change points fall among the first k steps.
  std::uint64_t steps = 20000;
  // Virtual time a scheduling point moves the program's clock by (a verbs
  // call, a clock read): a loop that waits "5 ms" for something ends.
  std::uint64_t quantum_ns = 1000;
  // Scheduling points a thread may run in a row while another thread could
  // run, before it moves below every other: PCT alone lets a thread that
  // never waits starve the rest forever (a worker looping until main, asleep,
  // tells it to stop); the kernel would have preempted it.
  std::uint64_t fairness_steps = 10000;
  // Wall-clock time the running thread may go without a scheduling point
  // while another could run, before it is released to run outside the
  // schedule (it waits in a call the harness does not model, or computes).
  // Not part of the schedule: it only decides when determinism is given up.
  std::uint64_t escape_ns = 250'000'000;
  // Preemption (docs/threads-and-time.md, "Preemption"): the percentage of
  // preemption points (the first call after an empty poll or a failed
  // try, the first after a wait ended) at which the thread is held while
  // virtual time moves on, as the kernel's scheduler holds a runnable
  // thread. 0: never.
  std::uint32_t preempt_percent = 10;
};

// How long a preempted thread is held: log-uniform between these, drawn
// from the seed. The shortest is a wake-up latency of a loaded machine;
// the longest CFS's scheduling period on a machine of 8 or more CPUs
// (sched_latency_ns: 6 ms x (1 + ilog2(8))), the longest a runnable
// thread waits behind the others of a run queue at the default settings.
inline constexpr std::uint64_t kShortestPreemptionNs = 100'000;
inline constexpr std::uint64_t kLongestPreemptionNs = 24'000'000;
// On a real provider a hold passes in real time (the device's completions
// do): then it is at most this.
inline constexpr std::uint64_t kRealProviderPreemptionNs = 1'000'000;

// How the options read in a replay line and in the run's first line:
// "pct:depth=3:steps=20000:preempt=10" or "random:preempt=10" (the escape
// time is not part of the schedule, and not printed).
std::string describe(const Options& options);
// Parses VERBFAULT_THREADS' value: "free", "pct[:depth=D][:steps=K]",
// "random", each with an optional ":preempt=P" and ":escape=MS"; nullopt
// for "free". Throws std::invalid_argument
// naming what was expected.
std::optional<Options> parse_threads(const std::string& text);

// What a blocked thread waits for: what wakes it, and what the deadlock
// report says of it.
enum class WaitKind : std::uint8_t { mutex, cond, join, semaphore, rwlock, fd, sleep };

// The fds one wait may name: a poll(2), select(2) or epoll set of an event
// loop (a channel, an async fd, sockets, the pipes of a launcher's
// children: mpirun -np 4 polls about 14). A call with more passes through
// to the C library (threads/fd_waits.cpp), so a Wait stays a fixed size.
inline constexpr std::size_t kMaxWaitFds = 64;

struct Wait {
  WaitKind kind = WaitKind::sleep;
  const void* object = nullptr;             // the mutex, condition, semaphore or rwlock
  ThreadId thread = 0;                      // join: the thread joined
  std::uint64_t deadline_ns = kNoDeadline;  // virtual time; a timed wait
  const char* call = "";                    // the call it is blocked in
  // fd: any of fds[0 .. fd_count) readable wakes it.
  int fds[kMaxWaitFds] = {};
  std::uint8_t fd_count = 0;
  // fd: one of the fds may become readable from outside the process (a
  // real provider's channel, a socket): the wait may end in real time, and
  // is never a deadlock. Said by the waiter, who knows what the fds are.
  bool external = false;
  // fd: none of the fds is a verbs event fd (a socket, a pipe, an eventfd:
  // an event loop's or a library's progress thread). The program's own
  // business: the liveness checks neither judge it (waiting_threads) nor
  // count it idle (others_idle), as when it blocked in the kernel.
  bool outside_only = false;
  // fd: a wait read(2) would make (ibv_get_cq_event, ibv_get_async_event, a
  // read of a channel's fd): a signal handler without SA_RESTART ends it,
  // as it ends the read of a real fd (signal(7)); the thread runs again and
  // Scheduler::interrupted() says so. With SA_RESTART it goes on waiting.
  bool interruptible = false;
  // fd: what it waits on ("channel#0"), named by the waiter (a report may
  // be made where the world cannot be asked); empty: World::fd_name of
  // the first fd.
  char fd_name[128] = {};
  // mutex, rwlock, semaphore, cond: Scheduler::outside_releases() read
  // before the lock was tried (a release outside the schedule since then
  // ends the block at once).
  std::uint64_t outside_releases = 0;

  // Adds `fd` to the fds of the wait; false when it holds kMaxWaitFds.
  bool add_fd(int fd) {
    if (fd_count == kMaxWaitFds) return false;
    fds[fd_count++] = fd;
    return true;
  }
};

// What the scheduler asks of the rest of the harness (the interposer).
class World {
 public:
  virtual ~World() = default;
  // Whether a wait for `fd` ends now: it can be read without blocking, or
  // the harness holds something back that a wait on it releases.
  virtual bool fd_readable(int fd) = 0;
  // Blocks (in real time) until one of `fds` is readable, or `timeout_ns`
  // of real time passed (kNoDeadline: no limit). `interruptible`: the
  // calling thread's own wait is (Wait::interruptible), and a signal
  // handler without SA_RESTART ends this wait too.
  enum class Outside : std::uint8_t { readable, quiet, interrupted };
  virtual Outside wait_external(const std::vector<int>& fds, std::uint64_t timeout_ns,
                                bool interruptible) = 0;
  // What `fd` is, for a report ("channel#0").
  virtual std::string fd_name(int fd) = 0;
  // Moves the device's own clock to its next deadline (a retry, a timer),
  // where it may raise completions and events; false when none is pending.
  // `fds`: what the threads blocked on fds wait for from outside; true at
  // once when one of them became readable since the scheduler looked.
  virtual bool advance_device(const std::vector<int>& fds) = 0;
  // Whether the running thread waits in the simulated device for another
  // process: a wait with a grace period of its own (sim/fabric/fabric_wait.h),
  // which the watchdog does not cut short. Asked under the scheduler's
  // lock: must take no lock of the harness.
  virtual bool holder_waits_in_device() { return false; }
  // Whether the program uses a real provider (its completions come in real
  // time): a preemption's hold then passes in real time too, and is kept
  // short. Asked under the scheduler's lock: must take no lock.
  virtual bool real_time_device() { return false; }
  // Every thread waits and nothing can wake any: report and end the run.
  [[noreturn]] virtual void deadlock(const std::string& report) = 0;
};

// A thread released to run outside the schedule: which one, and what it
// was doing ("blocked in read", "computing").
struct Escape {
  ThreadId thread = 0;
  std::string what;
};

class Scheduler {
 public:
  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  // Only for a scheduler whose threads have all ended (a unit test's): the
  // process's run, which owns the process's, is never destroyed.
  ~Scheduler();
  // Starts scheduling: the calling thread becomes thread 0.
  void start(const Options& options, World& world);
  // start() for the thread `handle` (kernel id `tid`) from another thread:
  // what the scheduler allocates comes from the caller's heap arena, not
  // that thread's (interposer/run.cpp makes the process's run on a thread
  // of its own). That thread then calls enter_as_started_thread().
  void start_for(const Options& options, World& world, pthread_t handle, pid_t tid);
  void enter_as_started_thread();
  bool running() const { return running_.load(std::memory_order_relaxed); }
  // Whether the calling thread takes part (started by the program while
  // the scheduler runs, or the one that started it). Static: it answers
  // without creating the scheduler (whose first construction allocates),
  // for it is asked from inside malloc too: ASan's allocator reads
  // clock_gettime, which libverbfault.so exports, holding its own lock.
  static bool manages_this_thread();
  // Whether the calling thread is inside the scheduler (a signal handler
  // ran in the middle of it): its calls must pass through.
  static bool inside();
  const Options& options() const { return options_; }

  // A scheduling point of the calling thread. `yielding`: it made no
  // progress (an empty poll, a failed trylock, sched_yield) and lets
  // another thread that can run go first.
  void point(bool yielding = false);
  // Blocks the calling thread until a wake names what it waits for, or
  // its deadline passes on the virtual clock (returns false then).
  bool block(const Wait& wait);
  // Whether the calling thread's last block ended by a signal handler
  // without SA_RESTART (an interruptible wait).
  static bool interrupted();
  // Makes the earliest waiter (wake_one) or every waiter on `object` able
  // to run; the caller keeps running.
  void wake_one(WaitKind kind, const void* object);
  void wake_all(WaitKind kind, const void* object);

  // A mutex, rwlock or semaphore released, or a condition signalled, by a
  // call outside the schedule (the harness's own code with its lock held,
  // whose allocation entered UCX's memory hooks; a thread the scheduler
  // does not manage): the threads blocked on `object` try again at the
  // next decision. Lock-free and allocation-free: the caller may hold any
  // lock. A lock-like wait reads outside_releases() before it tries the
  // lock (Wait::outside_releases), so a release between its try and its
  // block is not lost.
  void released_outside(const void* object);
  // released_outside on the process's scheduler if it runs; creates
  // nothing (asked from every unlock, inside an allocation too).
  static void note_release_outside(const void* object);
  std::uint64_t outside_releases() const {
    return outside_releases_.load(std::memory_order_seq_cst);
  }
  // A scheduled thread about to try a lock-like object and maybe block on
  // it (begin, before it reads outside_releases()), and done with it (end):
  // while none is, a release outside the schedule has nobody to wake and
  // costs one load (the harness's own mutexes, at every verbs call).
  void begin_lock_wait() { lock_intents_.fetch_add(1, std::memory_order_seq_cst); }
  void end_lock_wait() { lock_intents_.fetch_sub(1, std::memory_order_relaxed); }

  // pthread_create: the parent reserves the child's id before creating it,
  // then tells its handle (or that creation failed).
  ThreadId reserve_thread();
  void created(ThreadId id, pthread_t handle);
  void creation_failed(ThreadId id);
  // The new thread's first act: it waits for its first turn.
  void enter_thread(ThreadId id);
  // The calling thread ends: its joiners wake, another thread runs.
  void exit_thread();
  // The scheduled thread with this handle, if any, and whether it ended.
  std::optional<ThreadId> thread_of(pthread_t handle);
  bool finished(ThreadId id);
  // The calling thread's id (0 when not managed).
  ThreadId current() const;
  // Whether no thread but the calling one can act: every other one ended,
  // or waits with no deadline for something only a thread can do (not a
  // readable fd, not released by the watchdog). The checks' "nothing can
  // ever come" (a spin on empty polls, a wait forever); they ask whether
  // the device has work themselves. Asks the World nothing (the checks
  // call it under the interposer's lock).
  // `bounded`: for a caller holding a lock a holder of the scheduler's may
  // wait for (the simulated device's): gives up (false) after a bounded
  // spin instead of waiting.
  // `outside_waits_idle`: a thread waiting only for fds fed from outside
  // (Wait::outside_only: a socket, a listening socket in accept) counts as
  // idle while none is readable: it makes no verbs call until the world
  // outside wakes it. For the device's question whether a poll may block
  // for another process (libfabric's name server thread waits in accept for
  // the whole run); never for the liveness checks, for which such a thread
  // is the program's own business.
  bool others_idle(bool bounded = false, bool outside_waits_idle = false);
  // For a run the checks end while other threads exist: one line per
  // thread that has not ended ("  thread 1: pthread_join of thread 2"),
  // the calling one described by `doing`; empty with one thread. Asks the
  // World nothing.
  std::string threads_report(std::string_view doing);

  // The program's virtual clock, in ns since the run started; every read
  // moves it by the quantum, so a loop that reads it ends.
  std::uint64_t now_ns();
  // Moves the virtual clock to `ns` unless it is past it already.
  void advance_clock_to(std::uint64_t ns);
  // Sleeps the calling thread until `deadline_ns` on the virtual clock.
  void sleep_until(std::uint64_t deadline_ns, const char* call);

  // The calling thread is the only one left in a forked child: it becomes
  // thread 0 of a schedule of its own.
  void after_fork_in_child();
  // The run is ending (exit, a report): every call passes through.
  void stop();

  // The watchdog's look, every few ms of wall-clock time `wall_ns`: when
  // the running thread has made no scheduling point for the escape time
  // while another thread could run, it is released (marked escaped; the
  // baton goes to another thread), and what it was doing is returned. It
  // rejoins the schedule at its next scheduling point.
  std::optional<Escape> watch(std::uint64_t wall_ns);

  std::uint64_t steps() const { return steps_.load(std::memory_order_relaxed); }

  // For the hang watchdog (observers/checkers/hang_watch.h): each thread
  // alive in the schedule, by its kernel id, and what it waits for when it
  // is blocked in a modelled wait (a join, a lock, a condition, a sleep, a
  // channel); `waiting` false: it runs, waits for its turn, or was released
  // to run outside the schedule. Asks the World nothing when every blocked
  // thread's wait names its fds itself.
  struct Seen {
    pid_t tid = 0;
    ThreadId id = 0;
    bool waiting = false;
    std::string what;  // the wait, as a deadlock report says it
  };
  std::vector<Seen> seen();
  // The kernel ids of the threads blocked in a modelled wait the liveness
  // checks judge (not one on outside fds only, Wait::outside_only), into
  // `tids` (at most `max`); their number. Allocates nothing.
  std::size_t waiting_threads(pid_t* tids, std::size_t max);

 private:
  // escaped: released by the watchdog, running outside the schedule.
  enum class Status : std::uint8_t { reserved, runnable, blocked, finished, escaped };
  struct Thread {
    ThreadId id = 0;
    pid_t tid = 0;                     // the kernel's id (/proc/self/task/<tid>)
    std::atomic<std::uint32_t> go{0};  // 1: its turn (its futex word)
    Status status = Status::reserved;
    Wait wait;
    std::uint64_t wait_order = 0;  // FIFO among waiters
    bool woken = false;            // woken by a wake, not by its deadline
    // PCT's: d+1.. at the start, 1..d-1 after a change point, below 0
    // after the fairness bound moved it below every other.
    std::int64_t priority = 0;
    // The step it last held the baton at, or was not runnable at (kept
    // fresh while it waits): a runnable thread whose stamp is
    // fairness_steps old is starving (Scheduler::switch_from).
    std::uint64_t fresh_at = 0;
    // Preemption points (Scheduler::point): its last point was a yielding
    // one; a wait of its ended since its last point.
    bool yielded_last = false;
    bool woke = false;
    pthread_t handle{};
    bool has_handle = false;
    bool interrupted = false;  // its interruptible wait ended by a signal
  };

  Thread& add_thread();
  // With lock_ held: chooses the next thread, hands it the baton, and
  // (unless `self` ended) waits for self's next turn. Releases lock_.
  void switch_from(Thread& self, bool yielding);
  // The thread to run next (moving virtual time if nobody can run), or
  // nullptr when only an escaped thread can make progress; reports the
  // deadlock when nothing can. `self` may be nullptr (the watchdog).
  Thread* next_to_run(Thread* self, bool yielding);
  Thread* choose(Thread* self, bool yielding);
  // An escaped thread at a scheduling point is back in the schedule:
  // whether it holds the baton now (nobody held it) or must wait its turn.
  bool rejoin(Thread& self);
  // Every status change to runnable goes through here (lock_ held).
  void becomes_runnable(Thread& thread);
  // At a preemption point (lock_ held): whether the seed holds the thread
  // here, and then for how long (virtual ns; 0: not held).
  std::uint64_t preemption_hold() const;
  bool any_escaped() const;
  // With lock_ held: the threads blocked on objects released outside the
  // schedule become runnable; whether any did.
  bool take_outside_releases();
  // With lock_ held, when nothing can run: waits (lock_ released) up to the
  // escape time for a release outside the schedule when a thread waits on
  // a lock-like object, which a holder outside the schedule may release;
  // whether one came.
  bool wait_for_outside_release();
  static bool lock_like(WaitKind kind) {
    return kind == WaitKind::mutex || kind == WaitKind::rwlock || kind == WaitKind::semaphore ||
           kind == WaitKind::cond;
  }
  // With lock_ held, after a thread was added, ended or the baton moved.
  void update_solo();
  // What thread `tid` is doing, from /proc/self/task/<tid>/syscall.
  static std::string activity_of(pid_t tid);
  // Nobody can run: let virtual time or the device move. False: deadlock.
  // `self`: the thread deciding, when it is blocked itself.
  bool unblock_by_time(Thread* self);
  // With lock_ held: a blocked thread's interruptible wait ends (a signal).
  void interrupt(Thread& thread);
  // Wakes the thread that waits for outside fds while nobody runs
  // (kick_fd_), so that it looks at the threads again.
  void kick();
  static std::uint64_t real_now_ns();
  void refresh_waiters();
  bool any_fd_readable(const Wait& wait);
  // Whether one of an fd wait's fds is readable (or in error) now, asking
  // the kernel only.
  static bool fds_readable_now(const Wait& wait);
  [[noreturn]] void report_deadlock();
  // `ask_world` false: an fd the waiter did not name is said by number (the
  // World names it under the interposer's lock, which a caller holding
  // only the scheduler's must not wait for).
  std::string describe_wait(const Thread& thread, bool ask_world = true);
  // Waits for self's turn; a signal that interrupts an interruptible wait
  // makes self runnable (interrupt()) and it waits on for its turn.
  void wait_for_turn(Thread& self);
  static void hand_to(Thread& next);

  // RunLock that marks its holder (a thread-local flag): a signal handler
  // that interrupts the scheduler and calls a function the front door
  // interposes (clock_gettime is async-signal-safe) passes through instead
  // of taking the lock its thread holds.
  class Lock {
   public:
    void lock() noexcept;
    bool try_lock() noexcept;
    void unlock() noexcept;

   private:
    record::RunLock lock_;
  };
  Lock lock_;
  std::atomic<bool> running_{false};
  Options options_;
  World* world_ = nullptr;
  std::deque<Thread> threads_;                // by id; stable addresses
  std::vector<std::uint64_t> change_points_;  // PCT, sorted
  std::size_t next_change_ = 0;
  // Written under lock_, or by the only thread alive (solo_) without it;
  // the watchdog reads steps_ under lock_.
  std::atomic<std::uint64_t> steps_{0};
  std::uint64_t wait_orders_ = 0;
  std::atomic<std::uint64_t> now_ns_{0};
  // Exactly one thread is alive and it holds the baton: a scheduling point
  // has nobody to switch to, and takes the fast path (no lock; a program
  // with one thread pays a few loads and stores per verbs call).
  std::atomic<bool> solo_{false};
  // The fairness bound: the step the holder took the baton at, and the
  // priority the last thread moved below every other got.
  std::uint64_t holder_since_ = 0;
  std::int64_t floor_ = 0;
  // The thread holding the baton (nullptr: nobody, while only escaped
  // threads can make progress).
  Thread* holder_ = nullptr;
  // Releases outside the schedule (released_outside): a count, the
  // threads blocked on a lock-like object (written under lock_), and the
  // objects released since the last decision (a slot is claimed by CAS;
  // all full: every lock-like waiter tries again).
  static constexpr std::size_t kOutsideSlots = 16;
  std::atomic<std::uint64_t> outside_releases_{0};
  std::atomic<std::uint32_t> lock_intents_{0};
  std::atomic<std::uint32_t> lock_waiters_{0};
  std::atomic<const void*> outside_released_[kOutsideSlots] = {};
  std::atomic<bool> outside_overflow_{false};
  // A wait for outside fds while a deadline is due (unblock_by_time): the
  // virtual instant it began at, and when in real time (CLOCK_MONOTONIC).
  std::uint64_t outside_wait_at_ = 0;
  std::uint64_t outside_wait_since_ns_ = 0;
  // An eventfd among the fds of every wait for outside fds: interrupt() and
  // an escaped thread's rejoin() write it, so that the thread deciding
  // while nobody runs looks again.
  int kick_fd_ = -1;
  // The watchdog's view: steps_ when it last saw them change, and when.
  std::uint64_t watched_steps_ = 0;
  std::uint64_t watched_since_ns_ = 0;
};

}  // namespace verbfault::scheduler

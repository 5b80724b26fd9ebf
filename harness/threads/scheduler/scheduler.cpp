#include "scheduler.h"

#include "decision.h"

#include <fcntl.h>
#include <poll.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace verbfault::scheduler {

namespace {

// initial-exec: libverbfault.so is loaded with the program (preloaded or
// linked), so its thread-locals sit in the static TLS block and a read is
// one load off %fs, not a __tls_get_addr call; every pthread call of the
// program and of the device reads them.
#define VERBFAULT_TLS __attribute__((tls_model("initial-exec"))) thread_local
// The thread's place in the schedule (nullptr: not scheduled).
VERBFAULT_TLS void* t_self = nullptr;
// Whether the thread's last block ended by a signal (Scheduler::interrupted).
VERBFAULT_TLS bool t_interrupted = false;
// The thread holds the scheduler's lock, or waits for its turn.
VERBFAULT_TLS bool t_inside = false;

// The scheduler's draws are engine::draw's (engine/plan/decision.h: a pure
// function of the seed and a tuple), each in a stream of its own.
constexpr std::uint64_t kPriorityStream = 1;
constexpr std::uint64_t kChangePointStream = 2;
constexpr std::uint64_t kWalkStream = 3;
constexpr std::uint64_t kPreemptStream = 4;
constexpr std::uint64_t kPreemptLengthStream = 5;

std::uint64_t draw(std::uint64_t seed, std::uint64_t counter, std::uint64_t stream) {
  return engine::draw(seed, /*rule=*/0, /*object_key=*/0, counter, stream);
}

// Whether a signal handler without SA_RESTART interrupted the wait: the
// kernel restarts FUTEX_WAIT without a timeout for a handler with
// SA_RESTART (-ERESTARTSYS) and fails it with EINTR otherwise. EAGAIN (the
// word changed) and a wake both mean: look again.
bool futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) {
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
                 nullptr, nullptr, 0) < 0 &&
         errno == EINTR;
}

void futex_wake(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

// The name of a system call a thread may block in (x86-64 and aarch64
// numbers come from <sys/syscall.h>).
std::string syscall_name(long number) {
  struct Named {
    long number;
    const char* name;
  };
  static constexpr Named kNames[] = {
#ifdef SYS_read
      {SYS_read, "read"},
#endif
      {SYS_readv, "readv"},
      {SYS_pread64, "pread64"},
      {SYS_write, "write"},
      {SYS_writev, "writev"},
      {SYS_recvfrom, "recvfrom"},
      {SYS_recvmsg, "recvmsg"},
      {SYS_sendto, "sendto"},
      {SYS_sendmsg, "sendmsg"},
      {SYS_accept, "accept"},
      {SYS_accept4, "accept4"},
      {SYS_connect, "connect"},
#ifdef SYS_poll
      {SYS_poll, "poll"},
#endif
      {SYS_ppoll, "ppoll"},
#ifdef SYS_select
      {SYS_select, "select"},
#endif
      {SYS_pselect6, "pselect6"},
#ifdef SYS_epoll_wait
      {SYS_epoll_wait, "epoll_wait"},
#endif
      {SYS_epoll_pwait, "epoll_pwait"},
      {SYS_futex, "futex"},
      {SYS_nanosleep, "nanosleep"},
      {SYS_clock_nanosleep, "clock_nanosleep"},
      {SYS_wait4, "wait4"},
      {SYS_waitid, "waitid"},
      {SYS_ioctl, "ioctl"},
      {SYS_openat, "openat"},
      {SYS_rt_sigsuspend, "rt_sigsuspend"},
      {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
#ifdef SYS_pause
      {SYS_pause, "pause"},
#endif
      {SYS_msgrcv, "msgrcv"},
      {SYS_semop, "semop"},
      {SYS_semtimedop, "semtimedop"},
  };
  for (const Named& named : kNames)
    if (named.number == number) return named.name;
  return "system call " + std::to_string(number);
}

std::uint64_t parse_number(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(what + " must be a decimal number, not '" + text + "'");
  try {
    return std::stoull(text);
  } catch (const std::out_of_range&) {
    throw std::invalid_argument(what + " '" + text + "' is out of range");
  }
}

}  // namespace

std::string describe(const Options& options) {
  const std::string preempt = ":preempt=" + std::to_string(options.preempt_percent);
  if (options.strategy == Strategy::random_walk) return "random" + preempt;
  return "pct:depth=" + std::to_string(options.depth) + ":steps=" + std::to_string(options.steps) +
         preempt;
}

std::optional<Options> parse_threads(const std::string& text) {
  const std::string expected =
      "expected 'free', or 'pct[:depth=D][:steps=K]' or 'random', each with an optional "
      "':preempt=P' and ':escape=MS' (D in 1..64, K >= 1, P in 0..100, MS >= 1)";
  if (text == "free") return std::nullopt;
  Options options;
  std::size_t at;
  if (text.rfind("random", 0) == 0 && (text.size() == 6 || text[6] == ':')) {
    options.strategy = Strategy::random_walk;
    at = 6;
  } else if (text.rfind("pct", 0) == 0 && (text.size() == 3 || text[3] == ':')) {
    at = 3;
  } else {
    throw std::invalid_argument("'" + text + "': " + expected);
  }
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(':', at + 1), text.size());
    const std::string item = text.substr(at + 1, end - at - 1);
    const std::size_t equals = item.find('=');
    const std::string key = item.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : item.substr(equals + 1);
    if (key == "escape") {
      const std::uint64_t ms = parse_number(value, "escape");
      if (ms < 1 || ms > 3'600'000) throw std::invalid_argument("'" + text + "': " + expected);
      options.escape_ns = ms * 1'000'000;
    } else if (key == "preempt") {
      const std::uint64_t percent = parse_number(value, "preempt");
      if (percent > 100) throw std::invalid_argument("'" + text + "': " + expected);
      options.preempt_percent = static_cast<std::uint32_t>(percent);
    } else if (options.strategy == Strategy::random_walk) {
      throw std::invalid_argument("'" + text + "': random takes no knob '" + key + "'; " +
                                  expected);
    } else if (key == "depth") {
      options.depth = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(parse_number(value, "pct depth"), std::uint64_t{UINT32_MAX}));
      if (options.depth < 1 || options.depth > 64)
        throw std::invalid_argument("'" + text + "': " + expected);
    } else if (key == "steps") {
      options.steps = parse_number(value, "pct steps");
      if (options.steps < 1) throw std::invalid_argument("'" + text + "': " + expected);
    } else {
      throw std::invalid_argument("'" + text + "': unknown knob '" + key + "'; " + expected);
    }
    at = end;
  }
  return options;
}

namespace {
// The scheduler once start() ran (never reset: running() says whether it
// still schedules): what a call that must not create it asks.
std::atomic<Scheduler*> g_started{nullptr};
}  // namespace

Scheduler::~Scheduler() {
  Scheduler* self = this;
  g_started.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
  if (kick_fd_ >= 0) close(kick_fd_);
}

void Scheduler::note_release_outside(const void* object) {
  if (Scheduler* started = g_started.load(std::memory_order_acquire))
    started->released_outside(object);
}

void Scheduler::update_solo() {
  std::size_t alive = 0;
  for (const Thread& thread : threads_) alive += thread.status != Status::finished;
  solo_.store(alive == 1 && holder_ != nullptr && holder_->status == Status::runnable,
              std::memory_order_relaxed);
}

Scheduler::Thread& Scheduler::add_thread() {
  if (solo_.load(std::memory_order_relaxed)) {
    // The change points the fast path passed drop the one thread that ran.
    const std::uint64_t steps = steps_.load(std::memory_order_relaxed);
    for (; options_.strategy == Strategy::pct && next_change_ < change_points_.size() &&
           steps >= change_points_[next_change_];
         ++next_change_)
      holder_->priority = static_cast<std::int64_t>(next_change_ + 1);
    solo_.store(false, std::memory_order_relaxed);
  }
  Thread& thread = threads_.emplace_back();
  thread.id = static_cast<ThreadId>(threads_.size() - 1);
  // PCT: distinct initial priorities above every change point's (1..d-1):
  // a random high part and the id below it.
  thread.priority = static_cast<std::int64_t>(
      options_.depth + 1 +
      ((draw(options_.seed, thread.id, kPriorityStream) >> 24) << 20 | thread.id));
  return thread;
}

void Scheduler::start(const Options& options, World& world) {
  start_for(options, world, pthread_self(), static_cast<pid_t>(gettid()));
  enter_as_started_thread();
}

void Scheduler::enter_as_started_thread() { t_self = &threads_.front(); }

void Scheduler::start_for(const Options& options, World& world, pthread_t handle, pid_t tid) {
  std::unique_lock lock(lock_);
  options_ = options;
  world_ = &world;
  if (kick_fd_ < 0) kick_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  solo_.store(false, std::memory_order_relaxed);
  holder_ = nullptr;
  threads_.clear();
  change_points_.clear();
  for (std::uint32_t i = 0; i + 1 < options_.depth; ++i)
    change_points_.push_back(
        1 + engine::below(draw(options_.seed, i, kChangePointStream), options_.steps));
  std::sort(change_points_.begin(), change_points_.end());
  next_change_ = 0;
  holder_since_ = 0;
  floor_ = 0;
  steps_.store(0, std::memory_order_relaxed);
  now_ns_.store(0, std::memory_order_relaxed);
  Thread& main = add_thread();
  becomes_runnable(main);
  main.handle = handle;
  main.has_handle = true;
  main.tid = tid;
  holder_ = &main;
  solo_.store(true, std::memory_order_relaxed);
  watched_steps_ = 0;
  watched_since_ns_ = 0;
  running_.store(true, std::memory_order_relaxed);
  g_started.store(this, std::memory_order_release);
}

bool Scheduler::manages_this_thread() {
  // t_self is set by start() (or for a thread the scheduler started): the
  // scheduler exists once it is.
  Scheduler* started = g_started.load(std::memory_order_acquire);
  return t_self != nullptr && !t_inside && started != nullptr && started->running();
}

bool Scheduler::inside() {
  return t_inside;
}

void Scheduler::Lock::lock() noexcept {
  t_inside = true;
  lock_.lock();
}

bool Scheduler::Lock::try_lock() noexcept {
  t_inside = true;
  if (lock_.try_lock()) return true;
  t_inside = false;
  return false;
}

void Scheduler::Lock::unlock() noexcept {
  lock_.unlock();
  t_inside = false;
}

ThreadId Scheduler::current() const {
  return t_self != nullptr ? static_cast<Thread*>(t_self)->id : 0;
}

void Scheduler::hand_to(Thread& next) {
  next.go.store(1, std::memory_order_release);
  futex_wake(next.go);
}

void Scheduler::wait_for_turn(Thread& self) {
  t_inside = true;  // a signal handler that runs meanwhile is not scheduled
  while (self.go.exchange(0, std::memory_order_acquire) == 0)
    if (futex_wait(self.go, 0) && self.wait.interruptible) {
      lock_.lock();
      interrupt(self);
      lock_.unlock();
    }
  t_inside = false;
}

void Scheduler::interrupt(Thread& thread) {
  if (thread.status != Status::blocked || !thread.wait.interruptible) return;
  becomes_runnable(thread);
  thread.woken = false;
  thread.interrupted = true;
  // The thread deciding while nobody runs may be waiting for outside fds:
  // it looks again.
  kick();
}

bool Scheduler::interrupted() {
  return t_interrupted;
}

bool Scheduler::any_fd_readable(const Wait& wait) {
  // Outside fds only: the kernel alone says, in one call.
  if (wait.outside_only) return fds_readable_now(wait);
  for (std::size_t i = 0; i < wait.fd_count; ++i)
    if (world_->fd_readable(wait.fds[i])) return true;
  return false;
}

void Scheduler::released_outside(const void* object) {
  // No scheduled thread tries or waits for a lock-like object: none to
  // wake. (One that begins later tries the lock after this release: the
  // two seq_cst operations order the release before its try.)
  if (lock_intents_.load(std::memory_order_seq_cst) == 0 || !running()) return;
  outside_releases_.fetch_add(1, std::memory_order_seq_cst);
  // Nobody blocked on a lock-like object: nothing to record (a waiter that
  // blocks later saw the count move, Wait::outside_releases).
  if (lock_waiters_.load(std::memory_order_seq_cst) == 0) return;
  for (std::atomic<const void*>& slot : outside_released_) {
    const void* empty = nullptr;
    if (slot.compare_exchange_strong(empty, object, std::memory_order_acq_rel) || empty == object)
      return;
  }
  outside_overflow_.store(true, std::memory_order_release);
}

bool Scheduler::take_outside_releases() {
  if (lock_waiters_.load(std::memory_order_relaxed) == 0) return false;
  const bool all = outside_overflow_.exchange(false, std::memory_order_acq_rel);
  const void* released[kOutsideSlots];
  std::size_t count = 0;
  for (std::atomic<const void*>& slot : outside_released_)
    if (const void* object = slot.exchange(nullptr, std::memory_order_acq_rel))
      released[count++] = object;
  if (!all && count == 0) return false;
  bool woke = false;
  for (Thread& thread : threads_) {
    if (thread.status != Status::blocked || !lock_like(thread.wait.kind)) continue;
    if (!all && std::find(released, released + count, thread.wait.object) == released + count)
      continue;
    becomes_runnable(thread);
    thread.woken = true;
    woke = true;
  }
  return woke;
}

bool Scheduler::wait_for_outside_release() {
  if (lock_waiters_.load(std::memory_order_relaxed) == 0) return false;
  const std::uint64_t seen = outside_releases();
  for (std::uint64_t waited_ns = 0; waited_ns < options_.escape_ns; waited_ns += 1'000'000) {
    lock_.unlock();
    const timespec millisecond{0, 1'000'000};
    syscall(SYS_nanosleep, &millisecond, nullptr);
    lock_.lock();
    if (outside_releases() != seen) return true;
  }
  return false;
}

void Scheduler::refresh_waiters() {
  take_outside_releases();
  std::uint32_t lock_waiters = 0;
  for (Thread& thread : threads_) {
    if (thread.status != Status::blocked) continue;
    if (thread.wait.kind == WaitKind::fd && any_fd_readable(thread.wait)) {
      becomes_runnable(thread);
      thread.woken = true;
    } else if (thread.wait.deadline_ns != kNoDeadline &&
               thread.wait.deadline_ns <= now_ns_.load(std::memory_order_relaxed)) {
      becomes_runnable(thread);
      thread.woken = false;
    } else {
      lock_waiters += lock_like(thread.wait.kind);
    }
  }
  // Recounted at every decision (a wake of any kind may have ended a
  // lock-like wait); block() adds its own before it blocks. Stored only
  // when it changed: a seq_cst store is a full fence, at every verbs call.
  if (lock_waiters_.load(std::memory_order_relaxed) != lock_waiters)
    lock_waiters_.store(lock_waiters, std::memory_order_seq_cst);
}

Scheduler::Thread* Scheduler::choose(Thread* self, bool yielding) {
  std::size_t runnable = 0;
  for (const Thread& thread : threads_) runnable += thread.status == Status::runnable;
  const bool skip_self =
      yielding && self != nullptr && self->status == Status::runnable && runnable > 1;
  if (skip_self) --runnable;
  if (runnable == 0) return nullptr;
  if (options_.strategy == Strategy::random_walk) {
    std::uint64_t pick = engine::below(
        draw(options_.seed, steps_.load(std::memory_order_relaxed), kWalkStream), runnable);
    for (Thread& thread : threads_) {
      if (thread.status != Status::runnable || (skip_self && &thread == self)) continue;
      if (pick-- == 0) return &thread;
    }
    return nullptr;
  }
  Thread* best = nullptr;
  for (Thread& thread : threads_) {
    if (thread.status != Status::runnable || (skip_self && &thread == self)) continue;
    if (best == nullptr || thread.priority > best->priority) best = &thread;
  }
  return best;
}

std::uint64_t Scheduler::real_now_ns() {
  // The system call: clock_gettime is the front door's export, which
  // answers the program's virtual time.
  timespec now{};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000 +
         static_cast<std::uint64_t>(now.tv_nsec);
}

bool Scheduler::unblock_by_time(Thread* self) {
  std::uint64_t next = kNoDeadline;
  for (const Thread& thread : threads_)
    if (thread.status == Status::blocked) next = std::min(next, thread.wait.deadline_ns);
  // A real device's events (and a socket's bytes) come in real time: wait
  // for them (the run is as deterministic as the world outside). While a
  // deadline is due on the virtual clock, as long in real time as the
  // virtual clock has to go to it: the world outside answers in real time,
  // so a timeout on it must pass in real time too (qperf gives its peer
  // seconds to send its node information; an event loop that polls its
  // socket with a 1 ms timeout between polls of its CQ waits 1 ms), and a
  // socket that never speaks still lets the sleeper wake when it asked.
  std::vector<int> external;
  for (const Thread& thread : threads_)
    if (thread.status == Status::blocked && thread.wait.kind == WaitKind::fd &&
        thread.wait.external)
      external.insert(external.end(), thread.wait.fds, thread.wait.fds + thread.wait.fd_count);
  if (!external.empty() && kick_fd_ >= 0) {
    std::uint64_t kicks = 0;
    (void)!::read(kick_fd_, &kicks, sizeof kicks);  // non-blocking: the kicks so far are seen
    external.push_back(kick_fd_);
  }
  // The device's next deadline first: its retries run on its own clock.
  // With peers it acts only at quiescence, which it may count this process
  // in only while none of `external` is readable: a frame may have made a
  // channel readable since refresh_waiters looked.
  if (world_->advance_device(external)) return true;
  if (!external.empty()) {
    // The real time waited counts from the first such wait at this virtual
    // instant: the World may return early (with another process on the
    // fabric it looks for quiescence every ms), and the deadline is due
    // only once the whole of it has passed in real time.
    const std::uint64_t now = now_ns_.load(std::memory_order_relaxed);
    if (outside_wait_at_ != now || outside_wait_since_ns_ == 0) {
      outside_wait_at_ = now;
      outside_wait_since_ns_ = real_now_ns();
    }
    const std::uint64_t due = next == kNoDeadline ? kNoDeadline : (next > now ? next - now : 0);
    const std::uint64_t waited = real_now_ns() - outside_wait_since_ns_;
    if (due == kNoDeadline || waited < due) {
      const bool interruptible =
          self != nullptr && self->status == Status::blocked && self->wait.interruptible;
      lock_.unlock();
      const World::Outside outside = world_->wait_external(
          external, due == kNoDeadline ? kNoDeadline : due - waited, interruptible);
      lock_.lock();
      if (outside == World::Outside::interrupted && self != nullptr) interrupt(*self);
      if (outside != World::Outside::quiet || due == kNoDeadline) return true;
      if (real_now_ns() - outside_wait_since_ns_ < due) return true;  // early: not yet due
    }
  }
  if (next == kNoDeadline) return false;
  advance_clock_to(next);
  return true;
}

Scheduler::Thread* Scheduler::next_to_run(Thread* self, bool yielding) {
  refresh_waiters();
  Thread* next = choose(self, yielding);
  while (next == nullptr) {
    if (!unblock_by_time(self)) {
      // An escaped thread may still wake the others when it comes back.
      if (any_escaped()) return nullptr;
      // A lock held outside the schedule is released in real time.
      if (!wait_for_outside_release()) report_deadlock();
    }
    refresh_waiters();
    next = choose(self, false);
  }
  return next;
}

void Scheduler::switch_from(Thread& self, bool yielding) {
  // The PCT change point of this step: the running thread drops below
  // every other.
  if (options_.strategy == Strategy::pct && next_change_ < change_points_.size() &&
      steps_.load(std::memory_order_relaxed) >= change_points_[next_change_]) {
    self.priority = static_cast<std::int64_t>(next_change_ + 1);
    ++next_change_;
  }
  const std::uint64_t step = steps_.load(std::memory_order_relaxed);
  Thread* next = next_to_run(&self, yielding);
  // A runnable thread that has not had the baton for fairness_steps while
  // others passed it among themselves (two spinners yielding to each
  // other above it: a progress thread and a busy-polling server, while
  // the worker they woke waits for its turn) is starving.
  bool starving = false;
  for (Thread& thread : threads_) {
    if (thread.status != Status::runnable || &thread == next) {
      thread.fresh_at = step;
    } else if (&thread != &self && step - thread.fresh_at >= options_.fairness_steps) {
      starving = true;
    }
  }
  if (next == &self && step - holder_since_ >= options_.fairness_steps &&
      std::any_of(threads_.begin(), threads_.end(), [&](const Thread& other) {
        return &other != &self && other.status == Status::runnable;
      })) {
    // The fairness bound: self moves below every other thread, and another
    // runs.
    self.priority = --floor_;
    next = next_to_run(&self, false);
  } else if (starving && self.status == Status::runnable) {
    // The same bound for the threads that keep the baton among
    // themselves: the one passing it moves below every other, and at the
    // next such switch the next one does, until the starving thread is the
    // highest that can run. (The kernel's scheduler gives a thread that
    // waited to run its turn: CFS's vruntime.)
    self.priority = --floor_;
    next = next_to_run(&self, false);
    if (next != nullptr) next->fresh_at = step;
  }
  if (next != holder_) holder_since_ = steps_.load(std::memory_order_relaxed);
  holder_ = next;
  update_solo();
  if (next == &self) {
    lock_.unlock();
    return;
  }
  if (next != nullptr) hand_to(*next);
  const bool ended = self.status == Status::finished;
  lock_.unlock();
  if (!ended) wait_for_turn(self);
}

void Scheduler::becomes_runnable(Thread& thread) {
  thread.status = Status::runnable;
  // Its wait for the baton starts now (the starvation bound counts from
  // here, not from a stamp taken before it slept or was created).
  thread.fresh_at = steps_.load(std::memory_order_relaxed);
}

bool Scheduler::any_escaped() const {
  for (const Thread& thread : threads_)
    if (thread.status == Status::escaped) return true;
  return false;
}

bool Scheduler::rejoin(Thread& self) {
  if (self.status != Status::escaped) return true;
  becomes_runnable(self);
  if (holder_ == nullptr) {
    holder_ = &self;
    return true;
  }
  // The holder may be deciding while nobody could run, waiting for outside
  // fds (unblock_by_time): it looks again, and finds this thread runnable.
  kick();
  return false;
}

void Scheduler::kick() {
  if (kick_fd_ < 0) return;
  const std::uint64_t one = 1;
  (void)!::write(kick_fd_, &one, sizeof one);
}

void Scheduler::point(bool yielding) {
  auto* self = static_cast<Thread*>(t_self);
  if (self == nullptr || !running() || t_inside) return;
  if (solo_.load(std::memory_order_relaxed)) {
    // Nobody to switch to; only this thread writes the counters now.
    steps_.store(steps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    now_ns_.store(now_ns_.load(std::memory_order_relaxed) + options_.quantum_ns,
                  std::memory_order_relaxed);
    return;
  }
  lock_.lock();
  steps_.fetch_add(1, std::memory_order_relaxed);
  now_ns_.fetch_add(options_.quantum_ns, std::memory_order_relaxed);
  if (!rejoin(*self)) {
    lock_.unlock();
    wait_for_turn(*self);
    return;
  }
  // A preemption point: the first point after the thread stopped making
  // progress (its empty poll, its failed try: the window between an empty
  // poll and the arm), and the first after a wait of its ended (the window
  // between a wake-up and what the thread does with it).
  const bool preemptible = (yielding && !self->yielded_last) || self->woke;
  self->yielded_last = yielding;
  self->woke = false;
  if (preemptible)
    if (const std::uint64_t held_ns = preemption_hold(); held_ns != 0) {
      // Held as a sleep the thread did not ask for: the others run, the
      // clock moves to whatever deadline comes first, the device delivers
      // what became due; the thread runs again once its time is up.
      self->status = Status::blocked;
      self->wait = Wait{};
      self->wait.kind = WaitKind::sleep;
      self->wait.deadline_ns = now_ns_.load(std::memory_order_relaxed) + held_ns;
      self->wait.call = "preempted";
      self->wait_order = ++wait_orders_;
      self->woken = false;
      switch_from(*self, false);
      return;
    }
  switch_from(*self, yielding);
}

std::uint64_t Scheduler::preemption_hold() const {
  if (options_.preempt_percent == 0) return 0;
  const std::uint64_t step = steps_.load(std::memory_order_relaxed);
  if (engine::below(draw(options_.seed, step, kPreemptStream), 100) >= options_.preempt_percent)
    return 0;
  // Log-uniform between the bounds: as likely 0.1-1 ms as 1-10 ms.
  const double unit = static_cast<double>(draw(options_.seed, step, kPreemptLengthStream) >> 11) /
                      static_cast<double>(std::uint64_t{1} << 53);
  const double ratio =
      static_cast<double>(kLongestPreemptionNs) / static_cast<double>(kShortestPreemptionNs);
  const auto held = static_cast<std::uint64_t>(static_cast<double>(kShortestPreemptionNs) *
                                               std::pow(ratio, unit));
  // On a real provider a hold passes in real time (the others wait for
  // the device's fds in real time, or busy-poll it): there it is at most
  // 1 ms, longer than the think times the races need, and a threaded
  // program stays within a small factor of its --threads free time.
  if (world_ != nullptr && world_->real_time_device())
    return std::min(held, kRealProviderPreemptionNs);
  return held;
}

bool Scheduler::block(const Wait& wait) {
  t_interrupted = false;
  auto* self = static_cast<Thread*>(t_self);
  if (self == nullptr || !running() || t_inside) return true;
  lock_.lock();
  if (lock_like(wait.kind)) {
    lock_waiters_.fetch_add(1, std::memory_order_seq_cst);
    // Released outside the schedule since the caller tried the lock: it
    // tries again at once (released_outside saw no waiter to record).
    if (outside_releases() != wait.outside_releases) {
      lock_waiters_.fetch_sub(1, std::memory_order_relaxed);
      lock_.unlock();
      return true;
    }
  }
  steps_.fetch_add(1, std::memory_order_relaxed);
  const bool holding = rejoin(*self);
  self->status = Status::blocked;
  self->wait = wait;
  self->wait_order = ++wait_orders_;
  self->woken = false;
  if (holding) {
    switch_from(*self, false);
  } else {
    lock_.unlock();
    wait_for_turn(*self);
  }
  // Written by interrupt() under lock_ before self got its turn back.
  t_interrupted = self->interrupted;
  self->interrupted = false;
  self->woke = true;  // its next point may be a preemption's (point())
  return self->woken;
}

void Scheduler::wake_one(WaitKind kind, const void* object) {
  if (!running()) return;
  std::unique_lock lock(lock_);
  Thread* first = nullptr;
  for (Thread& thread : threads_)
    if (thread.status == Status::blocked && thread.wait.kind == kind &&
        thread.wait.object == object && (first == nullptr || thread.wait_order < first->wait_order))
      first = &thread;
  if (first != nullptr) {
    becomes_runnable(*first);
    first->woken = true;
  }
}

void Scheduler::wake_all(WaitKind kind, const void* object) {
  if (!running()) return;
  std::unique_lock lock(lock_);
  for (Thread& thread : threads_)
    if (thread.status == Status::blocked && thread.wait.kind == kind &&
        thread.wait.object == object) {
      becomes_runnable(thread);
      thread.woken = true;
    }
}

ThreadId Scheduler::reserve_thread() {
  std::unique_lock lock(lock_);
  return add_thread().id;
}

void Scheduler::created(ThreadId id, pthread_t handle) {
  std::unique_lock lock(lock_);
  Thread& thread = threads_[id];
  thread.handle = handle;
  thread.has_handle = true;
  becomes_runnable(thread);
}

void Scheduler::creation_failed(ThreadId id) {
  std::unique_lock lock(lock_);
  threads_[id].status = Status::finished;  // ids stay dense: it never ran
  update_solo();
}

void Scheduler::enter_thread(ThreadId id) {
  Thread* self;
  {
    std::unique_lock lock(lock_);
    self = &threads_[id];
    self->tid = gettid();
  }
  t_self = self;
  wait_for_turn(*self);
}

void Scheduler::exit_thread() {
  auto* self = static_cast<Thread*>(t_self);
  if (self == nullptr) return;
  t_self = nullptr;  // what the thread does after (TLS destructors) is not scheduled
  if (!running()) return;
  lock_.lock();
  steps_.fetch_add(1, std::memory_order_relaxed);
  const bool holding = rejoin(*self);
  self->status = Status::finished;
  for (Thread& thread : threads_)
    if (thread.status == Status::blocked && thread.wait.kind == WaitKind::join &&
        thread.wait.thread == self->id) {
      becomes_runnable(thread);
      thread.woken = true;
    }
  if (holding) {
    switch_from(*self, false);
  } else {
    update_solo();
    lock_.unlock();
  }
}

std::optional<ThreadId> Scheduler::thread_of(pthread_t handle) {
  std::unique_lock lock(lock_);
  for (const Thread& thread : threads_)
    if (thread.has_handle && pthread_equal(thread.handle, handle)) return thread.id;
  return std::nullopt;
}

bool Scheduler::finished(ThreadId id) {
  std::unique_lock lock(lock_);
  return id < threads_.size() && threads_[id].status == Status::finished;
}

std::uint64_t Scheduler::now_ns() {
  // Without the lock: a thread reads the clock holding the interposer's
  // lock (a poll), and the watchdog takes this one and then the
  // interposer's (refresh_waiters): the two orders would deadlock. The
  // clock only moves forward (advance_clock_to), so an increment and a
  // jump commute.
  return now_ns_.fetch_add(options_.quantum_ns, std::memory_order_relaxed) + options_.quantum_ns;
}

void Scheduler::advance_clock_to(std::uint64_t ns) {
  std::uint64_t seen = now_ns_.load(std::memory_order_relaxed);
  while (seen < ns && !now_ns_.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
  }
}

void Scheduler::sleep_until(std::uint64_t deadline_ns, const char* call) {
  Wait wait;
  wait.kind = WaitKind::sleep;
  wait.deadline_ns = deadline_ns;
  wait.call = call;
  block(wait);
}

void Scheduler::after_fork_in_child() {
  if (!running()) return;
  // The lock may have been held by a thread that does not exist here.
  new (&lock_) Lock();
  t_inside = false;
  auto* self = static_cast<Thread*>(t_self);
  const Options options = options_;
  World* world = world_;
  running_.store(false, std::memory_order_relaxed);
  if (self == nullptr) return;  // forked by a thread the schedule did not know
  start(options, *world);
}

bool Scheduler::fds_readable_now(const Wait& wait) {
  // By the system call, not poll(), which the front door exports; the
  // World is not asked (it takes the interposer's lock).
  pollfd polled[kMaxWaitFds];
  for (std::size_t i = 0; i < wait.fd_count; ++i) polled[i] = {wait.fds[i], POLLIN, 0};
  const timespec now{0, 0};
  return syscall(SYS_ppoll, polled, wait.fd_count, &now, nullptr, 0) != 0;
}

bool Scheduler::others_idle(bool bounded, bool outside_waits_idle) {
  if (!running()) return false;
  std::unique_lock lock(lock_, std::defer_lock);
  if (!bounded) {
    lock.lock();
  } else {
    // The caller holds a lock that a holder of lock_ may be waiting for
    // (the simulated device's, taken by advance_device under lock_): spin
    // a bounded while, then answer "no" rather than deadlock.
    for (int attempt = 0; !lock.try_lock(); ++attempt) {
      if (attempt == 100'000) return false;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
  const void* self = t_self;
  for (const Thread& thread : threads_) {
    if (&thread == self || thread.status == Status::finished) continue;
    if (thread.status != Status::blocked || thread.wait.deadline_ns != kNoDeadline ||
        (thread.wait.outside_only && !outside_waits_idle))
      return false;
    // Called by the checks under the interposer's lock: the fds themselves
    // are asked, not the world (which takes that lock); by the system call,
    // not poll(), which the front door exports.
    if (thread.wait.kind == WaitKind::fd && fds_readable_now(thread.wait)) return false;
  }
  return true;
}

std::optional<Escape> Scheduler::watch(std::uint64_t wall_ns) {
  if (!running()) return std::nullopt;
  std::unique_lock lock(lock_);
  const std::uint64_t steps = steps_.load(std::memory_order_relaxed);
  if (steps != watched_steps_ || watched_since_ns_ == 0) {
    watched_steps_ = steps;
    watched_since_ns_ = wall_ns;
    return std::nullopt;
  }
  // A holder that is not runnable is inside the scheduler (waiting for a
  // real device's fd), not stuck outside it.
  if (holder_ == nullptr || holder_->status != Status::runnable ||
      wall_ns - watched_since_ns_ < options_.escape_ns)
    return std::nullopt;
  // Release the holder only if its wait holds another thread back: one that
  // could run, whose wait virtual time or the device could end, or whose
  // fd is readable now (a progress thread blocked on its sockets holds
  // nothing back until one speaks). A lone thread reading a socket keeps
  // the run deterministic.
  bool others_could_move = false;
  for (const Thread& thread : threads_)
    if (&thread != holder_ &&
        (thread.status == Status::runnable ||
         (thread.status == Status::blocked &&
          (thread.wait.deadline_ns != kNoDeadline ||
           (thread.wait.kind == WaitKind::fd && fds_readable_now(thread.wait))))))
      others_could_move = true;
  if (!others_could_move) return std::nullopt;
  // In a poll that waits for another process: that wait ends by itself,
  // within its grace period, and says so in the trace if the wall clock
  // decided; it was allowed only while the others were idle.
  if (world_->holder_waits_in_device()) return std::nullopt;
  Thread& stuck = *holder_;
  Escape escape{stuck.id, activity_of(stuck.tid)};
  stuck.status = Status::escaped;
  Thread* next = next_to_run(nullptr, false);
  holder_ = next;
  if (next != nullptr) hand_to(*next);
  watched_since_ns_ = wall_ns;
  return escape;
}

std::vector<Scheduler::Seen> Scheduler::seen() {
  std::vector<Seen> threads;
  if (!running()) return threads;
  std::unique_lock lock(lock_);
  for (const Thread& thread : threads_) {
    if (thread.status == Status::finished || thread.status == Status::reserved) continue;
    Seen one{thread.tid, thread.id, thread.status == Status::blocked, {}};
    if (one.waiting) one.what = describe_wait(thread, /*ask_world=*/false);
    threads.push_back(std::move(one));
  }
  return threads;
}

std::size_t Scheduler::waiting_threads(pid_t* tids, std::size_t max) {
  if (!running()) return 0;
  std::unique_lock lock(lock_);
  std::size_t count = 0;
  for (const Thread& thread : threads_)
    if (thread.status == Status::blocked && !thread.wait.outside_only && count < max)
      tids[count++] = thread.tid;
  return count;
}

std::string Scheduler::activity_of(pid_t tid) {
  // /proc/<pid>/task/<tid>/syscall (proc(5)): the number of the system
  // call the thread is blocked in and its arguments, or "running".
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
  char text[256] = {};
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "an unknown call";
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return "an unknown call";
  if (std::strncmp(text, "running", 7) == 0) return "computing (no system call)";
  char* end = nullptr;
  const long number = std::strtol(text, &end, 10);
  if (end == text || number < 0) return "an unknown call";
  return "blocked in " + syscall_name(number);
}

void Scheduler::stop() {
  running_.store(false, std::memory_order_relaxed);
}

std::string Scheduler::describe_wait(const Thread& thread, bool ask_world) {
  const Wait& wait = thread.wait;
  std::string text = wait.call;
  char address[32];
  std::snprintf(address, sizeof address, "%p", wait.object);
  switch (wait.kind) {
    case WaitKind::mutex: {
      text += std::string(" of mutex ") + address;
      // glibc keeps the holder's kernel thread id in the mutex.
      const pid_t owner = static_cast<const pthread_mutex_t*>(wait.object)->__data.__owner;
      for (const Thread& other : threads_)
        if (owner != 0 && other.tid == owner && other.status != Status::finished)
          text += ", held by thread " + std::to_string(other.id);
      break;
    }
    case WaitKind::cond:
      text += std::string(" on condition ") + address + ", never signalled";
      break;
    case WaitKind::join:
      text += " of thread " + std::to_string(wait.thread) + ", which never ends";
      break;
    case WaitKind::semaphore:
      text += std::string(" on semaphore ") + address;
      break;
    case WaitKind::rwlock: {
      text += std::string(" of rwlock ") + address;
      // glibc keeps the writer's kernel thread id in the rwlock (readers
      // are only counted).
      const int writer = static_cast<const pthread_rwlock_t*>(wait.object)->__data.__cur_writer;
      for (const Thread& other : threads_)
        if (writer != 0 && other.tid == writer && other.status != Status::finished)
          text += ", write-locked by thread " + std::to_string(other.id);
      break;
    }
    case WaitKind::fd:
      text += " on " +
              (wait.fd_name[0] != '\0' ? std::string(wait.fd_name)
               : ask_world             ? world_->fd_name(wait.fd_count > 0 ? wait.fds[0] : -1)
                           : "fd " + std::to_string(wait.fd_count > 0 ? wait.fds[0] : -1)) +
              ", with nothing pending that can raise an event";
      break;
    case WaitKind::sleep:
      break;
  }
  return text;
}

std::string Scheduler::threads_report(std::string_view doing) {
  if (!running()) return "";
  std::unique_lock lock(lock_);
  std::size_t alive = 0;
  for (const Thread& thread : threads_) alive += thread.status != Status::finished;
  if (alive <= 1) return "";
  std::string report;
  for (const Thread& thread : threads_) {
    if (thread.status == Status::finished || thread.status == Status::reserved) continue;
    report += "  thread " + std::to_string(thread.id) + ": ";
    if (&thread == t_self)
      report += std::string(doing);
    else if (thread.status == Status::blocked)
      report += describe_wait(thread);
    else if (thread.status == Status::escaped)
      report += "running outside the harness";
    else
      report += "waiting for its turn";
    report += "\n";
  }
  return report;
}

void Scheduler::report_deadlock() {
  std::string report =
      "deadlock: every thread waits and nothing can wake any (no event pending, nothing "
      "due on the virtual clock):";
  for (const Thread& thread : threads_)
    if (thread.status == Status::blocked)
      report += "\n  thread " + std::to_string(thread.id) + ": " + describe_wait(thread);
  running_.store(false, std::memory_order_relaxed);
  World* world = world_;
  lock_.unlock();
  world->deadlock(report);
  std::abort();  // World::deadlock ends the run
}

}  // namespace verbfault::scheduler

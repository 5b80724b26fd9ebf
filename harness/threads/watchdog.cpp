// The watchdog thread: it releases a thread that stopped reaching
// scheduling points (scheduler.h, watch()) and looks for a hung program
// (hang_watchdog.h).
#include "thread_world.h"

#include <pthread.h>

namespace verbfault::interposer::thread_calls {

namespace {

// A thread released by the watchdog: the trace and stderr say from where
// the run is no longer a function of the seed.
void note_escape(const scheduler::Escape& escape) {
  Run& run = process_run();
  std::uint64_t position = 0;
  {
    std::unique_lock lock(run.mutex);
    position = run.trace.records();
    run.record(record::CallRecord({record::kNoSlot, {ObjectKind::thread, escape.thread}})
                   .add("event", "escaped")
                   .add("activity", escape.what));
  }
  std::fprintf(stderr,
               "verbfault: not deterministic from trace record %llu: thread %u is %s outside "
               "the harness\n",
               static_cast<unsigned long long>(position), escape.thread, escape.what.c_str());
}

// Whether this process has its watchdog thread (a forked child starts
// its own): it is one of the harness's threads, not the program's.
std::atomic<bool> g_watchdog_running{false};

// The watchdog: a thread outside the schedule that looks, a few times per
// escape time, whether the running thread has stopped reaching scheduling
// points while others wait for their turn (scheduler.h, watch()), and, a
// few times per hang time, whether the program is hung (hang_watchdog.h).
void* watchdog(void*) {
  // The harness's threads are named "vf-..." (hang_watchdog.cpp).
  pthread_setname_np(pthread_self(), "vf-watchdog");
  const bool scheduled = scheduling();
  const std::uint64_t escape_tick =
      scheduled ? std::max<std::uint64_t>(sched().options().escape_ns / 8, 1'000'000) : 0;
  const std::uint64_t hang_tick = hang::look_interval_ns();
  std::uint64_t tick_ns = scheduled ? escape_tick : hang_tick;
  if (scheduled && hang::enabled()) tick_ns = std::min(escape_tick, hang_tick);
  const timespec tick = timespec_of(tick_ns);
  std::uint64_t next_hang_look = 0;
  for (;;) {
    libc::real().nanosleep(&tick, nullptr);
    timespec wall{};
    libc::real().clock_gettime(CLOCK_MONOTONIC, &wall);
    const std::uint64_t now = ns_of(wall);
    if (scheduled)
      if (const std::optional<scheduler::Escape> escape = sched().watch(now)) note_escape(*escape);
    if (hang::enabled() && now >= next_hang_look) {
      next_hang_look = now + hang_tick;
      hang::look(now);
    }
  }
  return nullptr;
}

}  // namespace

void start_watchdog() {
  if (g_watchdog_running.exchange(true)) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  // Without a watchdog the run is still deterministic; it only cannot
  // release a thread stuck outside the harness, or end a hung run.
  if (libc::real().create(&thread, &attr, watchdog, nullptr) != 0) {
    g_watchdog_running = false;
    std::fprintf(stderr,
                 "verbfault: cannot start the watchdog thread; a thread blocked outside the "
                 "harness will hold the others back, and a hung run is not ended\n");
  }
  pthread_attr_destroy(&attr);
}

int harness_threads() {
  return g_watchdog_running.load(std::memory_order_relaxed) ? 1 : 0;
}

void after_fork_in_child() {
  // A forked child has one thread, the forking one: its own schedule (and
  // its own watchdog).
  g_watchdog_running = false;
  if (scheduler::Scheduler* scheduler = started_scheduler()) scheduler->after_fork_in_child();
  if (scheduling() || hang::enabled()) start_watchdog();
}

}  // namespace verbfault::interposer::thread_calls

// threaded_field_failures: the field failures of shared/field-failures.md
// that take two threads to happen, written the way applications write
// threads: a progress thread runs the completion event loop (wait for an
// event, acknowledge it, re-arm, poll) and hands each completion to the
// application under a mutex; the main thread is the worker: it posts
// signaled RDMA WRITEs and waits on a condition variable until the progress
// thread has counted their completions; at teardown it asks the progress
// thread to stop and joins it.
//
//   threaded_field_failures SCENARIO buggy|fixed
//
// Whether a buggy program goes wrong depends on where the progress thread
// is when the worker posts: run under `verbfault run --seed S` with
// VERBFAULT_THREADS=pct, the seed fixes the interleaving, so a seed that
// exposes the bug exposes it every time (harness/tests/
// test_threaded_failures.cpp). A hang then ends with exit status 122 and the
// scheduler's "deadlock:" report; a wait the device happened to rescue is
// caught by a runtime check (121). The fixed programs run clean under every
// interleaving. Exit status 0 when the program itself saw nothing wrong, 1
// when a verb or a completion failed, 2 for a usage error.
//
// Plain libibverbs and pthreads, one RC QP pair in loopback on the first
// device (loopback_pair.h).
#include "loopback_pair.h"

#include <infiniband/verbs.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

namespace {

using field_failures::fail;
using field_failures::Pair;

// Completions one poll takes: more than any scenario has in flight.
constexpr int kBatch = 16;
// The wr_id of the write the shutdown posts to wake the progress thread.
constexpr uint64_t kWakeUp = ~uint64_t{0};

// What the worker and the progress thread share.
struct Shared {
  Pair pair;
  bool fixed = false;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t counted = PTHREAD_COND_INITIALIZER;  // `completed` grew
  // Guarded by `mutex`.
  uint64_t completed = 0;  // the worker's completions counted so far
  bool stop = false;       // the worker asks the progress thread to end
  bool failed = false;     // an error completion
};

// ---- the progress thread's steps ----------------------------------------------------

// Hands `n` polled completions to the worker. The wake-up write is the
// shutdown's, not the worker's: not counted.
void deliver(Shared& s, const ibv_wc* wc, int n) {
  if (n == 0) return;
  pthread_mutex_lock(&s.mutex);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) s.failed = true;
    if (wc[i].wr_id != kWakeUp) ++s.completed;
  }
  pthread_cond_broadcast(&s.counted);
  pthread_mutex_unlock(&s.mutex);
}

// Polls until the CQ is empty, handing over each batch as it comes; how
// many completions there were. ibv_poll_cq(3) returns at most num_entries,
// possibly fewer than the CQ holds: only an empty poll says it is drained.
int drain(Shared& s) {
  int total = 0;
  for (;;) {
    ibv_wc wc[kBatch];
    const int n = s.pair.poll(kBatch, wc);
    if (n == 0) return total;
    deliver(s, wc, n);
    total += n;
  }
}

// Polls until the CQ is empty or `wc` is full, keeping what it took.
int collect(Shared& s, ibv_wc (&wc)[kBatch]) {
  int total = 0;
  while (total < kBatch) {
    const int n = s.pair.poll(kBatch - total, wc + total);
    if (n == 0) break;
    total += n;
  }
  return total;
}

// Blocks until the channel has an event and acknowledges it.
void take_event(Shared& s) {
  ibv_ack_cq_events(s.pair.wait(), 1);
}

bool stopping(Shared& s) {
  pthread_mutex_lock(&s.mutex);
  const bool stop = s.stop;
  pthread_mutex_unlock(&s.mutex);
  return stop;
}

// ---- the worker's steps -----------------------------------------------------------

void post(Shared& s, uint64_t wr_id) {
  if (int rc = s.pair.write(wr_id)) fail("ibv_post_send", rc);
}

// Waits until `count` of the worker's completions have been counted.
void await(Shared& s, uint64_t count) {
  pthread_mutex_lock(&s.mutex);
  while (s.completed < count && !s.failed) pthread_cond_wait(&s.counted, &s.mutex);
  pthread_mutex_unlock(&s.mutex);
}

// What the worker does: `bursts` bursts of `size` writes, each burst after
// the previous one has completed and `think_us` of think time (a sleep).
struct Workload {
  int bursts;
  int size;
  unsigned think_us = 0;
};

void work(Shared& s, const Workload& workload) {
  uint64_t posted = 0;
  for (int b = 0; b < workload.bursts; ++b) {
    if (workload.think_us != 0) usleep(workload.think_us);
    for (int i = 0; i < workload.size; ++i) post(s, ++posted);
    await(s, posted);
  }
}

// Asks the progress thread to stop and joins it. A flag alone does not
// wake a thread asleep in ibv_get_cq_event: only an event does
// (man ibv_get_cq_event: it blocks until a completion event is raised).
// So the shutdown posts one more signaled write; its completion raises the
// event the progress thread wakes up with, then it sees the flag.
void shut_down(Shared& s, pthread_t progress, bool wake_up) {
  pthread_mutex_lock(&s.mutex);
  s.stop = true;
  pthread_mutex_unlock(&s.mutex);
  if (wake_up) post(s, kWakeUp);
  pthread_join(progress, nullptr);
}

// Runs `progress` on a thread of its own and the workload on this one,
// then shuts the progress thread down (with the wake-up write when
// `wake_up`) and tears the pair down.
void run(bool fixed, void* (*progress)(void*), const Workload& workload, bool wake_up) {
  Shared s;
  s.fixed = fixed;
  pthread_t thread;
  if (int rc = pthread_create(&thread, nullptr, progress, &s)) fail("pthread_create", rc);
  work(s, workload);
  shut_down(s, thread, wake_up);
  pthread_mutex_lock(&s.mutex);
  const bool failed = s.failed;
  pthread_mutex_unlock(&s.mutex);
  s.pair.teardown();
  if (failed) {
    std::fprintf(stderr, "threaded_field_failures: a completion failed\n");
    std::exit(1);
  }
}

// ---- the scenarios ------------------------------------------------------------------

// The event loop done right: arm, then poll until empty, and only then
// sleep (man ibv_req_notify_cq: a completion already in the CQ when it is
// armed raises no event, so the poll after arming is what finds it).
void* careful_loop(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  s.pair.arm(s.pair.cq);
  for (;;) {
    drain(s);
    if (stopping(s)) return nullptr;
    take_event(s);
    s.pair.arm(s.pair.cq);
  }
}

// F09: at teardown the worker sets the stop flag and joins the progress
// thread. If the progress thread looked at the flag before it was set, it
// is asleep in ibv_get_cq_event with no completion coming: the buggy
// shutdown, a flag alone, leaves the join waiting for a thread that waits
// for an event. Found when the progress thread runs ahead of the worker
// after the last completion.
void t09(bool fixed) {
  run(fixed, careful_loop, {.bursts = 4, .size = 1}, /*wake_up=*/fixed);
}

// F10/F11: the progress thread polls the CQ empty, hands the batch to the
// worker, then re-arms and sleeps. The worker, woken by the hand-over, posts
// its next write at once: when it does so before the re-arm, the completion
// is in the CQ when it is armed, and an arm covers only the NEXT completion
// (man ibv_req_notify_cq; IBA 11.4.2.2). The buggy loop sleeps without
// polling again: the completion is stranded and the worker waits forever.
// The fixed loop polls once more after arming. Found when the worker runs
// ahead of the progress thread.
void* t10_loop(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  for (;;) {
    ibv_wc wc[kBatch];
    const int n = collect(s, wc);  // the last poll found nothing ...
    deliver(s, wc, n);             // ... the worker, woken here, posts its next write ...
    if (stopping(s)) return nullptr;
    s.pair.arm(s.pair.cq);  // ... which may have landed before this arm
    if (s.fixed && drain(s) > 0) continue;
    take_event(s);
  }
}

void t10(bool fixed) {
  run(fixed, t10_loop, {.bursts = 8, .size = 1}, /*wake_up=*/true);
}

// F12: one completion taken per event. Completions that land while the CQ
// is not armed share one event (the arm after an event covers the next
// completion only), so the buggy loop falls behind by one completion each
// time it happens and the worker, waiting for its whole burst, waits
// forever. The fixed loop drains the CQ after each event. Found when the
// worker posts its burst before the progress thread takes the event.
void* t12_loop(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  for (;;) {
    s.pair.arm(s.pair.cq);
    if (s.fixed) {
      drain(s);
    } else {
      ibv_wc wc[1];
      deliver(s, wc, s.pair.poll(1, wc));  // "one event, one completion"
    }
    if (stopping(s)) return nullptr;
    take_event(s);
  }
}

void t12(bool fixed) {
  run(fixed, t12_loop, {.bursts = 3, .size = 3}, /*wake_up=*/true);
}

// F13: an event with no completion behind it. A device may raise one (man
// ibv_get_cq_event warns of it; hardware that fires when a CQ is armed while
// it still holds completions does), and the test's plan makes the
// simulated device raise one on some arms (spurious_cq_event p=0.2). The
// buggy loop takes an empty CQ for "nothing happened" and goes back to
// sleep without re-arming: no further event comes, and the worker's next
// write is never counted. The fixed loop re-arms after every event. The
// worker thinks 100 us between writes: the progress thread has gone back
// to sleep before each, as between an application's requests.
void* t13_loop(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  s.pair.arm(s.pair.cq);
  drain(s);
  for (;;) {
    if (stopping(s)) return nullptr;
    take_event(s);
    ibv_wc wc[kBatch];
    const int n = s.pair.poll(kBatch, wc);
    if (n == 0 && !s.fixed) continue;  // "woken for nothing": asleep again, not re-armed
    s.pair.arm(s.pair.cq);
    deliver(s, wc, n);
    drain(s);
  }
}

void t13(bool fixed) {
  run(fixed, t13_loop, {.bursts = 8, .size = 1, .think_us = 100}, /*wake_up=*/true);
}

// F17: re-armed and asleep again after ONE poll. The buggy loop asks for
// more completions than the worker has in flight and takes what one
// ibv_poll_cq returns for all there is; but a poll returns at most
// num_entries (man ibv_poll_cq), a device may return fewer, and what stays
// in the re-armed CQ raises no event. The fixed loop polls until empty.
void* t17_loop(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  for (;;) {
    s.pair.arm(s.pair.cq);
    if (s.fixed) {
      drain(s);
    } else {
      ibv_wc wc[kBatch];
      deliver(s, wc, s.pair.poll(kBatch, wc));  // one poll taken for a drain
    }
    if (stopping(s)) return nullptr;
    take_event(s);
  }
}

void t17(bool fixed) {
  run(fixed, t17_loop, {.bursts = 3, .size = 4}, /*wake_up=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void(bool)>> scenarios = {
      {"t09", t09}, {"t10", t10}, {"t12", t12}, {"t13", t13}, {"t17", t17},
  };
  const std::string variant = argc == 3 ? argv[2] : "";
  auto scenario = argc == 3 ? scenarios.find(argv[1]) : scenarios.end();
  if (scenario == scenarios.end() || (variant != "buggy" && variant != "fixed")) {
    std::fprintf(stderr, "usage: threaded_field_failures SCENARIO buggy|fixed (SCENARIO: ");
    for (const auto& [name, run] : scenarios) std::fprintf(stderr, "%s ", name.c_str());
    std::fprintf(stderr, ")\n");
    return 2;
  }
  scenario->second(variant == "fixed");
  std::printf("threaded_field_failures: %s %s: done\n", argv[1], variant.c_str());
  return 0;
}

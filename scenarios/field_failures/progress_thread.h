// The two threads of the field-failure programs that take two threads,
// written the way applications write them: a progress thread runs the
// completion event loop (wait for an event, acknowledge it, re-arm, poll)
// and hands each completion to the application under a mutex; the main
// thread is the worker: it posts signaled RDMA WRITEs and waits on a
// condition variable until the progress thread has counted their
// completions; at teardown it asks the progress thread to stop and joins it.
//
// Whether a buggy program goes wrong depends on where the progress thread
// is when the worker posts: under `verbfault run --seed S` (the thread
// scheduler on) the seed fixes the interleaving, so a seed that exposes the
// bug exposes it every time. Each program supplies its progress loop; this
// header the steps both threads share. Plain libibverbs and pthreads, one
// RC QP pair in loopback (loopback_pair.h).
#pragma once

#include "loopback_pair.h"

#include <infiniband/verbs.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace field_failures {

// Completions one poll takes: more than any program has in flight.
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
  uint64_t errors = 0;     // how many
};

// ---- the progress thread's steps ----------------------------------------------------

// Hands `n` polled completions to the worker. The wake-up write is the
// shutdown's, not the worker's: not counted.
inline void deliver(Shared& s, const ibv_wc* wc, int n) {
  if (n == 0) return;
  pthread_mutex_lock(&s.mutex);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      s.failed = true;
      ++s.errors;
    }
    if (wc[i].wr_id != kWakeUp) ++s.completed;
  }
  pthread_cond_broadcast(&s.counted);
  pthread_mutex_unlock(&s.mutex);
}

// Polls until the CQ is empty, handing over each batch as it comes; how
// many completions there were. ibv_poll_cq(3) returns at most num_entries,
// and under a partial_poll fault fewer than the CQ holds: only an empty
// poll says it is drained, whatever the device.
inline int drain(Shared& s) {
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
inline int collect(Shared& s, ibv_wc (&wc)[kBatch]) {
  int total = 0;
  while (total < kBatch) {
    const int n = s.pair.poll(kBatch - total, wc + total);
    if (n == 0) break;
    total += n;
  }
  return total;
}

// Blocks until the channel has an event and acknowledges it.
inline void take_event(Shared& s) {
  ibv_ack_cq_events(s.pair.wait(), 1);
}

inline bool stopping(Shared& s) {
  pthread_mutex_lock(&s.mutex);
  const bool stop = s.stop;
  pthread_mutex_unlock(&s.mutex);
  return stop;
}

// The event loop done right: arm, then poll until empty, and only then
// sleep (man ibv_req_notify_cq: a completion already in the CQ when it is
// armed raises no event, so the poll after arming is what finds it).
inline void* careful_loop(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  s.pair.arm(s.pair.cq);
  for (;;) {
    drain(s);
    if (stopping(s)) return nullptr;
    take_event(s);
    s.pair.arm(s.pair.cq);
  }
}

// ---- the worker's steps -----------------------------------------------------------

inline void post(Shared& s, uint64_t wr_id) {
  if (int rc = s.pair.write(wr_id)) fail("ibv_post_send", rc);
}

// Waits until `count` of the worker's completions have been counted.
inline void await(Shared& s, uint64_t count) {
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

inline void work(Shared& s, const Workload& workload) {
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
inline void shut_down(Shared& s, pthread_t progress, bool wake_up) {
  pthread_mutex_lock(&s.mutex);
  s.stop = true;
  pthread_mutex_unlock(&s.mutex);
  if (wake_up) post(s, kWakeUp);
  pthread_join(progress, nullptr);
}

// Runs `progress` on a thread of its own and the workload on this one,
// then shuts the progress thread down (with the wake-up write when
// `wake_up`) and tears the pair down. A completion in error ends the
// program with exit status 1.
inline void run(bool fixed, void* (*progress)(void*), const Workload& workload, bool wake_up) {
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
    std::fprintf(stderr, "%s: a completion failed\n", program_invocation_short_name);
    std::exit(1);
  }
}

}  // namespace field_failures

// F01 (ofiwg/libfabric PR 4756, issue 4672): the verbs provider silently
// skipped IBV_WC_WR_FLUSH_ERR completions (a workaround for an iWARP
// shutdown problem); an application that counts its outstanding sends per
// connection never saw them drain after the peer disconnected.
//
//   field_failure_F01 buggy|fixed
//
// Two threads, as in a libfabric application: the progress thread is the
// provider's completion loop (poll until empty, then sleep on the channel)
// and hands each completion to the application; the worker is the
// application: it posts its sends, counting them outstanding, and when the
// connection closes it waits until every send has come back (success or
// error) before freeing the connection's buffers. The plan disconnects the
// QP in the middle of the sends (flush qp#0 nth=4): every send outstanding
// then and after completes with IBV_WC_WR_FLUSH_ERR (IBA 10.7.3.1: a
// flushed WR always generates a completion). The buggy provider loop drops
// the flushed completions: the count never drains, the worker waits
// forever and the progress thread sleeps on a CQ that will raise no event.
// The fixed loop hands every completion over; the worker sees its count
// drain, reports the failed sends and closes the connection.
#include "progress_thread.h"

namespace {

using namespace field_failures;

constexpr uint64_t kSends = 6;

// Hands polled completions to the application: each one is a send less
// outstanding (s.completed), s.errors of them failed.
void hand_over(Shared& s, const ibv_wc* wc, int n) {
  pthread_mutex_lock(&s.mutex);
  for (int i = 0; i < n; ++i) {
    if (s.fixed || wc[i].status != IBV_WC_WR_FLUSH_ERR) {
      if (wc[i].status != IBV_WC_SUCCESS) ++s.errors;
      if (wc[i].wr_id != kWakeUp) ++s.completed;
    }
    // buggy: a flushed completion "belongs to a connection being torn
    // down": skipped, the application never hears of it.
  }
  pthread_cond_broadcast(&s.counted);
  pthread_mutex_unlock(&s.mutex);
}

// The provider's progress loop: arm, poll until empty, sleep.
void* progress(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  s.pair.arm(s.pair.cq);
  for (;;) {
    for (;;) {
      ibv_wc wc[kBatch];
      const int n = s.pair.poll(kBatch, wc);
      if (n == 0) break;
      hand_over(s, wc, n);
    }
    if (stopping(s)) return nullptr;
    take_event(s);
    s.pair.arm(s.pair.cq);
  }
}

void f01(bool fixed) {
  Shared s;
  s.fixed = fixed;
  pthread_t thread;
  if (int rc = pthread_create(&thread, nullptr, progress, &s)) fail("pthread_create", rc);
  for (uint64_t i = 1; i <= kSends; ++i) post(s, i);
  // The connection closes: wait until nothing is outstanding.
  pthread_mutex_lock(&s.mutex);
  while (s.completed < kSends) pthread_cond_wait(&s.counted, &s.mutex);
  const uint64_t failed = s.errors;
  pthread_mutex_unlock(&s.mutex);
  shut_down(s, thread, /*wake_up=*/true);
  s.pair.teardown();
  std::printf("field_failure_F01: connection closed, %llu of %llu sends failed\n",
              static_cast<unsigned long long>(failed), static_cast<unsigned long long>(kSends));
}

}  // namespace

int main(int argc, char** argv) {
  return run_variant(argc, argv, f01);
}

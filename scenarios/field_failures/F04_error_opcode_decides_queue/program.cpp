// F04 (pytorch/tensorpipe PR 416): the GDR channel read the opcode of an
// error completion to tell whether it finished a send or a receive.
//
//   field_failure_F04 buggy|fixed
//
// Two threads, as in tensorpipe: the reactor thread runs the completion
// loop and advances the send queue or the receive queue by one for each
// completion, success or error, and the worker (a pipe writing messages)
// waits for its send, then for the receive that answers it. Only wr_id,
// status, qp_num and vendor_err of an error completion are defined
// (ibv_poll_cq(3)); the buggy reactor classifies by wc.opcode
// (`opcode & IBV_WC_RECV`), which for an error completion is whatever the
// device left there: on the simulated device 0xa5a5a5a5, which has the
// IBV_WC_RECV bit, so the failed send is booked on the receive queue. The
// send queue never advances and the worker waits forever for its send. The
// plan fails the second send (flush qp#0 nth=2). The fixed reactor keeps
// the direction of each work request itself, keyed by wr_id (PR 416's
// fix), and the worker reports the failed send.
#include "progress_thread.h"

namespace {

using namespace field_failures;

constexpr uint64_t kMessages = 4;
// Receives carry wr_ids from here on: the reactor's own record of which
// queue a work request belongs to.
constexpr uint64_t kFirstReceive = 1000;

enum Direction { kSend, kReceive };

// What the reactor tells the pipe, guarded by s.mutex.
struct Queues {
  uint64_t done[2] = {0, 0};
  bool error[2] = {false, false};
};
Queues queues;

Direction direction_of(const Shared& s, const ibv_wc& wc) {
  if (s.fixed) return wc.wr_id >= kFirstReceive ? kReceive : kSend;
  return (wc.opcode & IBV_WC_RECV) != 0 ? kReceive : kSend;  // undefined on error
}

void advance(Shared& s, const ibv_wc* wc, int n) {
  pthread_mutex_lock(&s.mutex);
  for (int i = 0; i < n; ++i) {
    if (wc[i].wr_id == kWakeUp) continue;
    const Direction d = direction_of(s, wc[i]);
    ++queues.done[d];
    if (wc[i].status != IBV_WC_SUCCESS) queues.error[d] = true;
  }
  pthread_cond_broadcast(&s.counted);
  pthread_mutex_unlock(&s.mutex);
}

void* reactor(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  s.pair.arm(s.pair.cq);
  for (;;) {
    for (;;) {
      ibv_wc wc[kBatch];
      const int n = s.pair.poll(kBatch, wc);
      if (n == 0) break;
      advance(s, wc, n);
    }
    if (stopping(s)) return nullptr;
    take_event(s);
    s.pair.arm(s.pair.cq);
  }
}

// Waits until `count` work requests of `d` are done or one failed; whether
// they all succeeded.
bool await_queue(Shared& s, Direction d, uint64_t count) {
  pthread_mutex_lock(&s.mutex);
  while (queues.done[d] < count && !queues.error[d]) pthread_cond_wait(&s.counted, &s.mutex);
  const bool ok = !queues.error[d];
  pthread_mutex_unlock(&s.mutex);
  return ok;
}

void f04(bool fixed) {
  Shared s;
  s.fixed = fixed;
  pthread_t thread;
  if (int rc = pthread_create(&thread, nullptr, reactor, &s)) fail("pthread_create", rc);
  uint64_t sent = 0;
  for (uint64_t m = 1; m <= kMessages; ++m) {
    if (int rc = s.pair.receive(s.pair.b, kFirstReceive + m, unsigned(m)))
      fail("ibv_post_recv", rc);
    if (int rc = s.pair.send(s.pair.a, m)) fail("ibv_post_send", rc);
    if (!await_queue(s, kSend, m) || !await_queue(s, kReceive, m)) {
      std::printf("field_failure_F04: message %llu failed: pipe closed\n",
                  static_cast<unsigned long long>(m));
      break;
    }
    sent = m;
  }
  shut_down(s, thread, /*wake_up=*/true);
  s.pair.teardown();
  std::printf("field_failure_F04: %llu of %llu messages sent\n",
              static_cast<unsigned long long>(sent), static_cast<unsigned long long>(kMessages));
}

}  // namespace

int main(int argc, char** argv) {
  return run_variant(argc, argv, f04);
}

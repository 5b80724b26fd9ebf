// Eight threads around one work queue, the way a thread pool is written:
// four producers each post signaled work requests on a QP of their own
// (SENDs and RDMA WRITEs, alternately) and queue one work item per request
// in a bounded, mutex-protected queue; four consumers pop the items (waiting
// on a condition variable while the queue is empty) and poll each item's
// completions from the producer's CQ. Main starts them, joins them and
// checks that every request completed once and every SEND arrived intact.
// Without the scheduler the order of their verbs calls changes from run
// to run; with it (VERBFAULT_THREADS=pct and a seed) the seed fixes it
// (test_verbfault_run.cpp).
#include "verbfault_testing/rc_connect.h"

#include <infiniband/verbs.h>
#include <pthread.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>

namespace {

constexpr int kProducers = 4;
constexpr int kConsumers = 4;
constexpr int kRequests = 12;  // per producer; every other one a SEND
constexpr int kSends = kRequests / 2;
constexpr std::size_t kQueueCapacity = 4;  // producers wait when it is full
constexpr int kSlot = 64;                  // bytes a request carries

// One producer's connection: QP `a` sends and writes to QP `b`, both
// completing into `cq`, which its consumers poll under `cq_mutex` (a CQ is
// not to be polled by two threads at once without a lock of their own).
struct Lane {
  ibv_cq* cq = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  pthread_mutex_t cq_mutex = PTHREAD_MUTEX_INITIALIZER;
  char out[kRequests][kSlot] = {};      // what each request carries
  char written[kRequests][kSlot] = {};  // RDMA WRITE targets
  char received[kSends][kSlot] = {};    // SEND targets (b's receives)
  bool completed[kRequests] = {};       // guarded by Shared::mutex
};

// A work item: the request `request` of producer `lane`, and how many
// completions it raises on the lane's CQ (a SEND also completes b's
// receive).
struct Item {
  int lane;
  int request;
  int completions;
};

struct Shared {
  Lane lanes[kProducers];
  ibv_mr* mr = nullptr;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
  pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
  // Guarded by `mutex`.
  std::deque<Item> queue;
  int producers_done = 0;
  int completions = 0;
  bool failed = false;
};

Shared shared;  // large; the MR covers it

struct Producer {
  int lane;
};

void* produce(void* raw) {
  const int l = static_cast<Producer*>(raw)->lane;
  Lane& lane = shared.lanes[l];
  for (int r = 0; r < kRequests; ++r) {
    const bool send = r % 2 == 0;
    std::snprintf(lane.out[r], kSlot, "lane %d request %d", l, r);
    ibv_sge sge{reinterpret_cast<uint64_t>(lane.out[r]), kSlot, shared.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(r);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(lane.written[r]);
    wr.wr.rdma.rkey = shared.mr->rkey;
    ibv_send_wr* bad = nullptr;
    pthread_mutex_lock(&shared.mutex);
    while (shared.queue.size() == kQueueCapacity)
      pthread_cond_wait(&shared.not_full, &shared.mutex);
    // Posted under the queue's mutex: the item is queued in posting order.
    if (ibv_post_send(lane.a, &wr, &bad) != 0) {
      shared.failed = true;
    } else {
      shared.queue.push_back({l, r, send ? 2 : 1});
      pthread_cond_signal(&shared.not_empty);
    }
    pthread_mutex_unlock(&shared.mutex);
  }
  pthread_mutex_lock(&shared.mutex);
  ++shared.producers_done;
  pthread_cond_broadcast(&shared.not_empty);  // consumers may be waiting for the end
  pthread_mutex_unlock(&shared.mutex);
  return nullptr;
}

void* consume(void*) {
  for (;;) {
    pthread_mutex_lock(&shared.mutex);
    while (shared.queue.empty() && shared.producers_done < kProducers)
      pthread_cond_wait(&shared.not_empty, &shared.mutex);
    if (shared.queue.empty()) {
      pthread_mutex_unlock(&shared.mutex);
      return nullptr;
    }
    const Item item = shared.queue.front();
    shared.queue.pop_front();
    pthread_cond_signal(&shared.not_full);
    pthread_mutex_unlock(&shared.mutex);

    // The item's completions, whichever of the lane's requests they belong
    // to: consumers of one lane take its completions in turns.
    Lane& lane = shared.lanes[item.lane];
    ibv_wc wc[2];
    int polled = 0;
    pthread_mutex_lock(&lane.cq_mutex);
    while (polled < item.completions) {
      const int n = ibv_poll_cq(lane.cq, item.completions - polled, wc + polled);
      if (n < 0) break;
      polled += n;  // an empty poll lets the other threads run first
    }
    pthread_mutex_unlock(&lane.cq_mutex);

    pthread_mutex_lock(&shared.mutex);
    for (int i = 0; i < polled; ++i) {
      // Only wr_id and status are valid in an error completion (ibv_poll_cq(3)).
      if (wc[i].status != IBV_WC_SUCCESS)
        shared.failed = true;
      else if (wc[i].opcode != IBV_WC_RECV)
        lane.completed[wc[i].wr_id] = true;
    }
    if (polled < item.completions) shared.failed = true;
    shared.completions += polled;
    pthread_mutex_unlock(&shared.mutex);
  }
}

}  // namespace

int main() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 2;
  ibv_context* context = ibv_open_device(list[0]);
  if (context == nullptr) return 2;
  ibv_pd* pd = ibv_alloc_pd(context);
  shared.mr =
      ibv_reg_mr(pd, &shared, sizeof shared, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (pd == nullptr || shared.mr == nullptr) return 2;
  ibv_port_attr port{};
  if (ibv_query_port(context, 1, &port) != 0) return 2;
  for (Lane& lane : shared.lanes) {
    // Room for both QPs' queues: 2 x (kRequests + kSends).
    lane.cq = ibv_create_cq(context, 2 * (kRequests + kSends), nullptr, nullptr, 0);
    if (lane.cq == nullptr) return 2;
    ibv_qp_init_attr attr{};
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = kRequests;
    attr.cap.max_recv_wr = kSends;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    attr.send_cq = attr.recv_cq = lane.cq;
    lane.a = ibv_create_qp(pd, &attr);
    lane.b = ibv_create_qp(pd, &attr);
    if (lane.a == nullptr || lane.b == nullptr) return 2;
    verbfault::testing::RcConnectOptions to_b;
    to_b.dest_qp_num = lane.b->qp_num;
    to_b.dlid = port.lid;
    verbfault::testing::RcConnectOptions to_a = to_b;
    to_a.dest_qp_num = lane.a->qp_num;
    if (verbfault::testing::rc_connect(lane.a, to_b) != 0 ||
        verbfault::testing::rc_connect(lane.b, to_a) != 0)
      return 2;
    for (int i = 0; i < kSends; ++i) {
      ibv_sge sge{reinterpret_cast<uint64_t>(lane.received[i]), kSlot, shared.mr->lkey};
      ibv_recv_wr wr{};
      wr.wr_id = static_cast<uint64_t>(i);
      wr.sg_list = &sge;
      wr.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      if (ibv_post_recv(lane.b, &wr, &bad) != 0) return 2;
    }
  }

  pthread_t producers[kProducers], consumers[kConsumers];
  Producer roles[kProducers];
  for (int i = 0; i < kProducers; ++i) {
    roles[i].lane = i;
    if (pthread_create(&producers[i], nullptr, produce, &roles[i]) != 0) return 2;
  }
  for (pthread_t& consumer : consumers)
    if (pthread_create(&consumer, nullptr, consume, nullptr) != 0) return 2;
  for (pthread_t producer : producers) pthread_join(producer, nullptr);
  for (pthread_t consumer : consumers) pthread_join(consumer, nullptr);

  // Every request completed once; a lane's SENDs arrive in order (RC).
  bool ok = !shared.failed && shared.completions == kProducers * (kRequests + kSends);
  for (int l = 0; l < kProducers; ++l) {
    const Lane& lane = shared.lanes[l];
    for (int r = 0; r < kRequests; ++r) {
      ok = ok && lane.completed[r];
      const char* landed = r % 2 == 0 ? lane.received[r / 2] : lane.written[r];
      ok = ok && std::strcmp(landed, lane.out[r]) == 0;
    }
  }
  std::printf("eight_threads: %d completions, %s\n", shared.completions, ok ? "OK" : "FAILED");
  for (Lane& lane : shared.lanes) {
    ibv_destroy_qp(lane.a);
    ibv_destroy_qp(lane.b);
    ibv_destroy_cq(lane.cq);
  }
  ibv_dereg_mr(shared.mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  ibv_free_device_list(list);
  return ok ? 0 : 1;
}

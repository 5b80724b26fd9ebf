// A program written the way applications write threads: a server thread
// busy-polls its CQ and re-posts receives; a client thread sends and
// waits (mutex + condition variable) until the server says the message
// arrived, with a deadline read from the clock; main joins both. Without
// the scheduler the order of their verbs calls changes from run to run;
// with it, the seed fixes it (test_verbfault_run.cpp).
#include "verbfault_testing/rc_connect.h"

#include <infiniband/verbs.h>
#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr int kMessages = 20;

struct Shared {
  ibv_qp* client_qp = nullptr;
  ibv_qp* server_qp = nullptr;
  ibv_cq* client_cq = nullptr;
  ibv_cq* server_cq = nullptr;
  ibv_mr* mr = nullptr;
  char buffer[2 * 64 * kMessages] = {};
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t arrived = PTHREAD_COND_INITIALIZER;
  int received = 0;
  bool failed = false;
};

bool post_recv(Shared& s, int i) {
  ibv_sge sge{reinterpret_cast<uint64_t>(s.buffer + 64 * (kMessages + i)), 64, s.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = static_cast<uint64_t>(i);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(s.server_qp, &wr, &bad) == 0;
}

void* server(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  for (int i = 0; i < kMessages; ++i) {
    ibv_wc wc{};
    int n = 0;
    while ((n = ibv_poll_cq(s.server_cq, 1, &wc)) == 0) {
    }
    pthread_mutex_lock(&s.mutex);
    if (n < 0 || wc.status != IBV_WC_SUCCESS) s.failed = true;
    ++s.received;
    pthread_cond_signal(&s.arrived);
    pthread_mutex_unlock(&s.mutex);
  }
  return nullptr;
}

void* client(void* raw) {
  Shared& s = *static_cast<Shared*>(raw);
  for (int i = 0; i < kMessages; ++i) {
    std::snprintf(s.buffer + 64 * i, 64, "message %d", i);
    ibv_sge sge{reinterpret_cast<uint64_t>(s.buffer + 64 * i), 64, s.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(s.client_qp, &wr, &bad) != 0) {
      s.failed = true;
      return nullptr;
    }
    ibv_wc wc{};
    while (ibv_poll_cq(s.client_cq, 1, &wc) == 0) {
    }
    // Wait for the server, at most a second (of the program's clock).
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    pthread_mutex_lock(&s.mutex);
    while (s.received <= i && !s.failed)
      if (pthread_cond_timedwait(&s.arrived, &s.mutex, &deadline) != 0) s.failed = true;
    pthread_mutex_unlock(&s.mutex);
  }
  return nullptr;
}

}  // namespace

int main() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 2;
  ibv_context* context = ibv_open_device(list[0]);
  if (context == nullptr) return 2;
  static Shared s;
  ibv_pd* pd = ibv_alloc_pd(context);
  s.mr = ibv_reg_mr(pd, s.buffer, sizeof s.buffer, IBV_ACCESS_LOCAL_WRITE);
  s.client_cq = ibv_create_cq(context, 2 * kMessages, nullptr, nullptr, 0);
  s.server_cq = ibv_create_cq(context, 2 * kMessages, nullptr, nullptr, 0);
  if (pd == nullptr || s.mr == nullptr || s.client_cq == nullptr || s.server_cq == nullptr)
    return 2;
  ibv_qp_init_attr attr{};
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = kMessages;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.send_cq = attr.recv_cq = s.client_cq;
  s.client_qp = ibv_create_qp(pd, &attr);
  attr.send_cq = attr.recv_cq = s.server_cq;
  s.server_qp = ibv_create_qp(pd, &attr);
  if (s.client_qp == nullptr || s.server_qp == nullptr) return 2;
  ibv_port_attr port{};
  if (ibv_query_port(context, 1, &port) != 0) return 2;
  verbfault::testing::RcConnectOptions to_server;
  to_server.dest_qp_num = s.server_qp->qp_num;
  to_server.dlid = port.lid;
  verbfault::testing::RcConnectOptions to_client = to_server;
  to_client.dest_qp_num = s.client_qp->qp_num;
  if (verbfault::testing::rc_connect(s.client_qp, to_server) != 0 ||
      verbfault::testing::rc_connect(s.server_qp, to_client) != 0)
    return 2;
  for (int i = 0; i < kMessages; ++i)
    if (!post_recv(s, i)) return 2;
  pthread_t threads[2];
  if (pthread_create(&threads[0], nullptr, server, &s) != 0 ||
      pthread_create(&threads[1], nullptr, client, &s) != 0)
    return 2;
  pthread_join(threads[1], nullptr);
  pthread_join(threads[0], nullptr);
  if (s.failed || s.received != kMessages) {
    std::fprintf(stderr, "threaded_pingpong: %d of %d messages arrived\n", s.received, kMessages);
    return 1;
  }
  for (int i = 0; i < kMessages; ++i) {
    char expected[64];
    std::snprintf(expected, sizeof expected, "message %d", i);
    if (std::strcmp(s.buffer + 64 * (kMessages + i), expected) != 0) return 1;
  }
  ibv_destroy_qp(s.client_qp);
  ibv_destroy_qp(s.server_qp);
  ibv_destroy_cq(s.client_cq);
  ibv_destroy_cq(s.server_cq);
  ibv_dereg_mr(s.mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  ibv_free_device_list(list);
  return 0;
}

// One thread, a drain loop bounded by the clock, as applications write it:
// poll; on an empty poll, give up once 2 ms passed since the last
// completion, else usleep(50) and poll again. With the real clock the
// number of empty polls (and so the trace) changes from run to run; on
// the harness's virtual clock (docs/threads-and-time.md: each verbs
// call moves it by a quantum, a sleep jumps it) it is a function of the
// seed. Exit status 0 when all completions arrived.
#include "verbfault_testing/rc_connect.h"

#include <infiniband/verbs.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace {

constexpr int kWrites = 8;

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

int main() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 2;
  ibv_context* context = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (context == nullptr) return 2;
  static char buffer[4096];
  ibv_pd* pd = ibv_alloc_pd(context);
  ibv_mr* mr = pd != nullptr ? ibv_reg_mr(pd, buffer, sizeof buffer,
                                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
                             : nullptr;
  ibv_cq* cq = ibv_create_cq(context, 4 * kWrites, nullptr, nullptr, 0);
  if (mr == nullptr || cq == nullptr) return 2;
  ibv_qp_init_attr attr{};
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = kWrites;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.send_cq = attr.recv_cq = cq;
  ibv_qp* a = ibv_create_qp(pd, &attr);
  ibv_qp* b = ibv_create_qp(pd, &attr);
  ibv_port_attr port{};
  if (a == nullptr || b == nullptr || ibv_query_port(context, 1, &port) != 0) return 2;
  verbfault::testing::RcConnectOptions to_b;
  to_b.dest_qp_num = b->qp_num;
  to_b.dlid = port.lid;
  verbfault::testing::RcConnectOptions to_a = to_b;
  to_a.dest_qp_num = a->qp_num;
  if (verbfault::testing::rc_connect(a, to_b) != 0 || verbfault::testing::rc_connect(b, to_a) != 0)
    return 2;
  for (int i = 0; i < kWrites; ++i) {
    ibv_sge sge{reinterpret_cast<uint64_t>(buffer), 64, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(buffer + 2048);
    wr.wr.rdma.rkey = mr->rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(a, &wr, &bad) != 0) return 2;
  }
  int completions = 0;
  long empty_polls = 0;
  for (std::int64_t last = now_ns();;) {
    ibv_wc wc[4];
    const int got = ibv_poll_cq(cq, 4, wc);
    if (got < 0) return 2;
    if (got > 0) {
      completions += got;
      last = now_ns();
      continue;
    }
    ++empty_polls;
    if (now_ns() - last > 2'000'000) break;
    usleep(50);
  }
  std::printf("timed_drain: %d completions, then %ld empty polls in 2 ms\n", completions,
              empty_polls);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  return completions == kWrites ? 0 : 1;
}

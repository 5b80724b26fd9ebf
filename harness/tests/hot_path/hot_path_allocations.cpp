// The hot path allocates nothing: a program that counts every malloc,
// calloc and realloc of the process (these definitions interpose on
// glibc's for every library, libverbfault.so and the simulated device
// included) while it runs, after a warm-up, a steady loop of the fast-path
// verbs on vfsim0: post_recv, post_send, poll_cq (empty and not),
// req_notify_cq, and the completion event it brings (ibv_get_cq_event,
// ibv_ack_cq_events). Run by ctest once per harness mode (no configuration; a
// seed and rules that are decided at every poll, post and arm but never
// fire). Exits 0 when the loop allocated nothing, 1 with the count
// otherwise, 2 when the pair cannot be set up.
#include "verbfault_testing/rc_connect.h"

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
}

namespace {
std::atomic<bool> counting{false};
std::atomic<unsigned long> allocations{0};
void count() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
void* calloc(size_t count_, size_t size) {
  count();
  return __libc_calloc(count_, size);
}
void* realloc(void* pointer, size_t size) {
  count();
  return __libc_realloc(pointer, size);
}
}

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "hot_path_allocations: %s\n", what);
  return 2;
}

}  // namespace

int main() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_device* device = nullptr;
  for (int i = 0; list != nullptr && i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), "vfsim0") == 0) device = list[i];
  if (device == nullptr) return fail("vfsim0 not listed");
  ibv_context* context = ibv_open_device(device);
  ibv_free_device_list(list);
  if (context == nullptr) return fail("ibv_open_device failed");
  ibv_pd* pd = ibv_alloc_pd(context);
  ibv_comp_channel* channel = ibv_create_comp_channel(context);
  ibv_cq* cq_a = ibv_create_cq(context, 64, nullptr, channel, 0);
  ibv_cq* cq_b = ibv_create_cq(context, 64, nullptr, nullptr, 0);
  static char buffer_a[64], buffer_b[64];
  ibv_mr* mr_a = ibv_reg_mr(pd, buffer_a, sizeof buffer_a, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* mr_b = ibv_reg_mr(pd, buffer_b, sizeof buffer_b, IBV_ACCESS_LOCAL_WRITE);
  if (!pd || !channel || !cq_a || !cq_b || !mr_a || !mr_b) return fail("resources");
  ibv_qp_init_attr init{};
  init.qp_type = IBV_QPT_RC;
  init.cap = {16, 16, 1, 1, 0};
  init.send_cq = init.recv_cq = cq_a;
  ibv_qp* a = ibv_create_qp(pd, &init);
  init.send_cq = init.recv_cq = cq_b;
  ibv_qp* b = ibv_create_qp(pd, &init);
  ibv_port_attr port{};
  if (!a || !b || ibv_query_port(context, 1, &port) != 0) return fail("QPs");
  using verbfault::testing::rc_connect;
  if (rc_connect(a, {.dest_qp_num = b->qp_num, .dlid = port.lid}) != 0 ||
      rc_connect(b, {.dest_qp_num = a->qp_num, .dlid = port.lid}) != 0)
    return fail("rc_connect");

  ibv_sge sge_a{reinterpret_cast<uintptr_t>(buffer_a), 64, mr_a->lkey};
  ibv_sge sge_b{reinterpret_cast<uintptr_t>(buffer_b), 64, mr_b->lkey};
  auto round = [&](std::uint64_t id) {
    ibv_recv_wr recv{};
    recv.wr_id = id;
    recv.sg_list = &sge_b;
    recv.num_sge = 1;
    ibv_recv_wr* bad_recv = nullptr;
    ibv_send_wr send{};
    send.wr_id = id;
    send.sg_list = &sge_a;
    send.num_sge = 1;
    send.opcode = IBV_WR_SEND;
    send.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad_send = nullptr;
    ibv_wc wc[4];
    if (ibv_post_recv(b, &recv, &bad_recv) != 0) return false;
    if (ibv_req_notify_cq(cq_a, 0) != 0) return false;
    if (ibv_post_send(a, &send, &bad_send) != 0) return false;
    int got_a = 0, got_b = 0;
    for (int polls = 0; polls < 100000 && (got_a == 0 || got_b == 0); ++polls) {
      const int na = ibv_poll_cq(cq_a, 4, wc);
      const int nb = ibv_poll_cq(cq_b, 4, wc);
      if (na < 0 || nb < 0) return false;
      got_a += na;
      got_b += nb;
    }
    // The event the arm produced (a completion arrived after it), taken
    // and acknowledged as an event loop does; then an empty poll, as a
    // drain loop ends.
    ibv_cq* event_cq = nullptr;
    void* event_context = nullptr;
    if (ibv_get_cq_event(channel, &event_cq, &event_context) != 0 || event_cq != cq_a) return false;
    ibv_ack_cq_events(event_cq, 1);
    return got_a == 1 && got_b == 1 && ibv_poll_cq(cq_b, 4, wc) == 0;
  };
  // Warm-up: scratch buffers and tables reach their steady size.
  for (std::uint64_t i = 0; i < 1000; ++i)
    if (!round(i)) return fail("warm-up round failed");
  counting = true;
  bool ok = true;
  for (std::uint64_t i = 0; i < 10000 && ok; ++i) ok = round(i);
  counting = false;
  if (!ok) return fail("measured round failed");
  const unsigned long count_ = allocations.load();
  std::printf(
      "hot_path_allocations: %lu allocation(s) in 10000 rounds of post_recv, "
      "req_notify_cq, post_send, poll_cq, get_cq_event\n",
      count_);
  const bool destroyed = ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 &&
                         ibv_dereg_mr(mr_a) == 0 && ibv_dereg_mr(mr_b) == 0 &&
                         ibv_destroy_cq(cq_a) == 0 && ibv_destroy_cq(cq_b) == 0 &&
                         ibv_destroy_comp_channel(channel) == 0 && ibv_dealloc_pd(pd) == 0 &&
                         ibv_close_device(context) == 0;
  if (!destroyed) return fail("teardown");
  return count_ == 0 ? 0 : 1;
}

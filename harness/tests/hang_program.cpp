// Programs that never finish, for the hang watchdog (docs/threads-and-time.md,
// "The hang watchdog"), on the first device listed: vfsim0, or vfreal0 of the provider
// double, which the harness treats as a real provider.
//
//   hang_program wait_event       arms a CQ with nothing posted and waits
//                                 in ibv_get_cq_event: no event ever comes
//   hang_program spin             polls an empty CQ forever
//   hang_program waiter_thread    a thread waits as wait_event does; the
//                                 main thread joins it
//   hang_program read_pipe        after its verbs calls, reads a pipe
//                                 nobody writes (a wait the harness does
//                                 not see: not a hang it may judge)
//   hang_program overacked_destroy acknowledges an event never taken, then
//                                 destroys the CQ (libibverbs waits forever
//                                 in ibv_destroy_cq on a real provider)
//   hang_program event_after_wait a correct program: a second thread posts
//                                 after a pause while the first waits for the
//                                 completion's event; exit 0
//   hang_program one_per_event    a thread writes to itself four times (RDMA
//                                 WRITE), 20 ms apart; per completion event the main
//                                 thread polls ONE completion, re-arms and
//                                 waits again (a bug: an event may stand for
//                                 several completions, ibv_get_cq_event(3),
//                                 which spaced completions hide); exit 0 when
//                                 all arrive
//   hang_program drain_per_event  the same, draining the CQ after each event
//                                 (correct)
//
// Exit status 0 when the program ended as it meant to, 1 when a verbs call
// failed, 2 for a usage error; the hanging modes do not end on their own.
#include <infiniband/verbs.h>
#include <pthread.h>
#include <verbfault_testing/rc_connect.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "hang_program: %s failed\n", what);
  std::_Exit(1);
}

struct Device {
  ibv_context* context = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;

  Device() {
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (list == nullptr || count == 0) fail("ibv_get_device_list");
    context = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (context == nullptr) fail("ibv_open_device");
    channel = ibv_create_comp_channel(context);
    if (channel == nullptr) fail("ibv_create_comp_channel");
    cq = ibv_create_cq(context, 16, nullptr, channel, 0);
    if (cq == nullptr) fail("ibv_create_cq");
  }
};

Device* device = nullptr;

// Arms the CQ and waits for its next event (none comes: nothing is posted).
void wait_for_event() {
  if (ibv_req_notify_cq(device->cq, 0) != 0) fail("ibv_req_notify_cq");
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(device->channel, &cq, &context) != 0) fail("ibv_get_cq_event");
  ibv_ack_cq_events(cq, 1);
}

void* waiter(void*) {
  wait_for_event();
  return nullptr;
}

// event_after_wait: a loopback RC QP on the device (a self-connected QP
// sends to itself, connected by verbfault_testing's rc_connect), one send
// and one receive.
struct Loopback {
  ibv_pd* pd = nullptr;
  ibv_mr* mr = nullptr;
  ibv_qp* qp = nullptr;
  char buffer[64] = {};

  // `receives`: how many receives to post up front.
  explicit Loopback(int receives = 1) {
    pd = ibv_alloc_pd(device->context);
    if (pd == nullptr) fail("ibv_alloc_pd");
    mr = ibv_reg_mr(pd, buffer, sizeof buffer, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (mr == nullptr) fail("ibv_reg_mr");
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = device->cq;
    init.qp_type = IBV_QPT_RC;
    init.cap = {8, 8, 1, 1, 0};
    qp = ibv_create_qp(pd, &init);
    if (qp == nullptr) fail("ibv_create_qp");
    ibv_port_attr port{};
    if (ibv_query_port(device->context, 1, &port) != 0) fail("ibv_query_port");
    // A RoCE port has no LID: the path needs a GRH with the port's own GID
    // (index 1 on rxe: the RoCEv2 GID of its IPv4 address); InfiniBand
    // routes by the LID.
    verbfault::testing::RcConnectOptions path{.dest_qp_num = qp->qp_num, .dlid = port.lid};
    if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
      if (ibv_query_gid(device->context, 1, 1, &path.grh.dgid) != 0) fail("ibv_query_gid");
      path.grh.sgid_index = 1;
      path.grh.hop_limit = 1;
    }
    if (verbfault::testing::rc_connect(qp, path) != 0) fail("ibv_modify_qp");
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buffer + 32), 32, mr->lkey};
    ibv_recv_wr recv{};
    recv.sg_list = &sge;
    recv.num_sge = 1;
    ibv_recv_wr* bad_recv = nullptr;
    for (int i = 0; i < receives; ++i)
      if (ibv_post_recv(qp, &recv, &bad_recv) != 0) fail("ibv_post_recv");
  }

  // An RDMA WRITE to itself: one completion, the sender's.
  void write() { post(IBV_WR_RDMA_WRITE, 2); }
  // A SEND: the sender's completion and the receive's.
  void send() { post(IBV_WR_SEND, 1); }

  // One signaled WR of the buffer's first half (a WRITE lands in its
  // second half).
  void post(ibv_wr_opcode opcode, std::uint64_t wr_id) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buffer), 32, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(buffer + 32);
    wr.wr.rdma.rkey = mr->rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qp, &wr, &bad) != 0) fail("ibv_post_send");
  }
};

Loopback* loopback = nullptr;

// one_per_event / drain_per_event: messages sent one at a time, apart.
constexpr int kSpacedMessages = 4;

void* spaced_sender(void*) {
  for (int i = 0; i < kSpacedMessages; ++i) {
    usleep(20'000);
    loopback->write();
  }
  return nullptr;
}

void* late_sender(void*) {
  // A pause (virtual time under the scheduler), then the send the waiter
  // waits for.
  usleep(200'000);
  loopback->send();
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc == 2 ? argv[1] : "";
  const char* modes[] = {
      "wait_event",       "spin",          "waiter_thread",  "read_pipe", "overacked_destroy",
      "event_after_wait", "one_per_event", "drain_per_event"};
  bool known = false;
  for (const char* m : modes) known = known || std::strcmp(mode, m) == 0;
  if (!known) {
    std::fprintf(stderr,
                 "usage: hang_program wait_event|spin|waiter_thread|read_pipe|"
                 "overacked_destroy|event_after_wait|one_per_event|drain_per_event\n");
    return 2;
  }
  Device opened;
  device = &opened;
  if (std::strcmp(mode, "wait_event") == 0) {
    wait_for_event();
  } else if (std::strcmp(mode, "spin") == 0) {
    ibv_wc wc{};
    for (;;)
      if (ibv_poll_cq(device->cq, 1, &wc) != 0) break;
  } else if (std::strcmp(mode, "waiter_thread") == 0) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, waiter, nullptr) != 0) fail("pthread_create");
    pthread_join(thread, nullptr);
  } else if (std::strcmp(mode, "read_pipe") == 0) {
    int fds[2];
    if (pipe(fds) != 0) fail("pipe");
    char byte = 0;
    if (read(fds[0], &byte, 1) != 1) fail("read");
  } else if (std::strcmp(mode, "overacked_destroy") == 0) {
    ibv_ack_cq_events(device->cq, 1);  // an event that was never taken
    const int result = ibv_destroy_cq(device->cq);
    std::fprintf(stderr, "hang_program: ibv_destroy_cq returned %d\n", result);
    return result == 0 ? 0 : 1;
  } else if (std::strcmp(mode, "one_per_event") == 0 || std::strcmp(mode, "drain_per_event") == 0) {
    const bool drain = mode[0] == 'd';
    Loopback pair(0);
    loopback = &pair;
    if (ibv_req_notify_cq(device->cq, 0) != 0) fail("ibv_req_notify_cq");
    pthread_t thread;
    if (pthread_create(&thread, nullptr, spaced_sender, nullptr) != 0) fail("pthread_create");
    int completions = 0;
    while (completions < kSpacedMessages) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      if (ibv_get_cq_event(device->channel, &cq, &context) != 0) fail("ibv_get_cq_event");
      ibv_ack_cq_events(cq, 1);
      if (ibv_req_notify_cq(cq, 0) != 0) fail("ibv_req_notify_cq");
      ibv_wc wc[8];
      int n;
      do {
        n = ibv_poll_cq(cq, drain ? 8 : 1, wc);
        if (n < 0) fail("ibv_poll_cq");
        for (int i = 0; i < n; ++i)
          if (wc[i].status != IBV_WC_SUCCESS) fail("a completion");
        completions += n;
      } while (drain && n > 0);
    }
    pthread_join(thread, nullptr);
    std::printf("hang_program: every completion arrived\n");
  } else {
    Loopback pair;
    loopback = &pair;
    if (ibv_req_notify_cq(device->cq, 0) != 0) fail("ibv_req_notify_cq");
    pthread_t thread;
    if (pthread_create(&thread, nullptr, late_sender, nullptr) != 0) fail("pthread_create");
    // Events until both the send's and the receive's completions are in.
    int completions = 0;
    while (completions < 2) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      if (ibv_get_cq_event(device->channel, &cq, &context) != 0) fail("ibv_get_cq_event");
      ibv_ack_cq_events(cq, 1);
      if (ibv_req_notify_cq(cq, 0) != 0) fail("ibv_req_notify_cq");
      ibv_wc wc[4];
      int n;
      while ((n = ibv_poll_cq(cq, 4, wc)) > 0) {
        for (int i = 0; i < n; ++i)
          if (wc[i].status != IBV_WC_SUCCESS) fail("a completion");
        completions += n;
      }
      if (n < 0) fail("ibv_poll_cq");
    }
    pthread_join(thread, nullptr);
    std::printf("hang_program: both completions arrived\n");
  }
  return 0;
}

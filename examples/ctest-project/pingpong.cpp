// pingpong: an RC ping-pong between two QPs of one process, written against
// plain libibverbs: QP `a` sends a counter, QP `b` receives it and sends it
// back, N times. It is the program under test of examples/ctest-project:
// `verbfault_add_fault_tests` runs it under every fault class of verbfault's
// default battery, one ctest a class.
//
// What makes it a correct program under those faults: every work completion
// is polled and its status checked, and one that did not succeed ends the
// program with exit status 1 (a flushed or failed work request will not be
// retried by anyone); a failed post does the same. It waits the careful
// way: one completion channel for both CQs, an event acked and its CQ
// re-armed before the CQs are drained, so that an event that covers several
// completions, or comes with none, or a poll that returns fewer than it
// could, loses nothing.
//
// Built with EXAMPLE_BUGGY (cmake -DEXAMPLE_BUGGY=ON), it drops a completion
// that did not succeed and goes on waiting for the one it expected, which
// never comes: the classes whose faults end in an error completion find it
// blocked forever.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Buffers {
  std::uint64_t send = 0;
  std::uint64_t recv = 0;
};

// One QP with its own CQ; both CQs report to one channel.
struct Side {
  const char* name = "";
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  Buffers buffers;
  bool sent = false;      // the send posted last has completed
  bool received = false;  // the receive posted last has completed
};

// A work request's wr_id says which of a side's queues it was posted to:
// an error completion's opcode is not valid (ibv_poll_cq(3)), its wr_id is.
constexpr std::uint64_t kSendId = 1;
constexpr std::uint64_t kRecvId = 2;

[[noreturn]] void fail(const char* what, int error) {
  std::fprintf(stderr, "pingpong: %s failed: %s\n", what, std::strerror(error));
  std::exit(1);
}

void post_recv(Side& side) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(&side.buffers.recv), sizeof side.buffers.recv,
              side.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = kRecvId;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  side.received = false;
  if (int rc = ibv_post_recv(side.qp, &wr, &bad)) fail("ibv_post_recv", rc);
}

void post_send(Side& side, std::uint64_t value) {
  side.buffers.send = value;
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(&side.buffers.send), sizeof side.buffers.send,
              side.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = kSendId;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  side.sent = false;
  if (int rc = ibv_post_send(side.qp, &wr, &bad)) fail("ibv_post_send", rc);
}

// Polls the side's CQ until it is empty: a poll that returns fewer than
// asked does not mean the CQ is empty, only one that returns none does.
void drain(Side& side) {
  for (;;) {
    ibv_wc wc[4];
    const int n = ibv_poll_cq(side.cq, 4, wc);
    if (n < 0) {
      std::fprintf(stderr, "pingpong: ibv_poll_cq on %s's CQ returned %d\n", side.name, n);
      std::exit(1);
    }
    if (n == 0) return;
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
#ifdef EXAMPLE_BUGGY
        // The bug: the completion is dropped as if it were noise, and the
        // program waits on for the success it expected.
        continue;
#else
        std::fprintf(stderr, "pingpong: %s: %s completion failed: %s\n", side.name,
                     wc[i].wr_id == kSendId ? "send" : "receive", ibv_wc_status_str(wc[i].status));
        std::exit(1);
#endif
      }
      if (wc[i].wr_id == kSendId) {
        side.sent = true;
      } else {
        if (wc[i].byte_len != sizeof side.buffers.recv) {
          std::fprintf(stderr, "pingpong: %s received %u bytes, expected %zu\n", side.name,
                       wc[i].byte_len, sizeof side.buffers.recv);
          std::exit(1);
        }
        side.received = true;
      }
    }
  }
}

// Waits until `sender` has its send completion and `receiver` its receive.
void await_exchange(ibv_comp_channel* channel, Side& sender, Side& receiver) {
  for (;;) {
    drain(sender);
    drain(receiver);
    if (sender.sent && receiver.received) return;
    // Each CQ is armed or has an event pending (armed at creation, re-armed
    // with each event taken), so a completion still to come raises one.
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(channel, &cq, &context)) fail("ibv_get_cq_event", errno);
    ibv_ack_cq_events(cq, 1);
    if (int rc = ibv_req_notify_cq(cq, 0)) fail("ibv_req_notify_cq", rc);
  }
}

void create(Side& side, ibv_context* ctx, ibv_pd* pd, ibv_comp_channel* channel) {
  side.cq = ibv_create_cq(ctx, 4, &side, channel, 0);
  if (side.cq == nullptr) fail("ibv_create_cq", errno);
  if (int rc = ibv_req_notify_cq(side.cq, 0)) fail("ibv_req_notify_cq", rc);
  ibv_qp_init_attr init{};
  init.send_cq = side.cq;
  init.recv_cq = side.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 1;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  side.qp = ibv_create_qp(pd, &init);
  if (side.qp == nullptr) fail("ibv_create_qp", errno);
  side.mr = ibv_reg_mr(pd, &side.buffers, sizeof side.buffers, IBV_ACCESS_LOCAL_WRITE);
  if (side.mr == nullptr) fail("ibv_reg_mr", errno);
}

// INIT, RTR towards the peer QP (addressed by LID), RTS.
void connect(Side& side, std::uint32_t peer_qpn, std::uint16_t lid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  if (int rc = ibv_modify_qp(side.qp, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    fail("ibv_modify_qp(INIT)", rc);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer_qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = lid;
  a.ah_attr.port_num = 1;
  if (int rc = ibv_modify_qp(side.qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    fail("ibv_modify_qp(RTR)", rc);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  if (int rc = ibv_modify_qp(side.qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    fail("ibv_modify_qp(RTS)", rc);
}

void destroy(Side& side) {
  if (int rc = ibv_destroy_qp(side.qp)) fail("ibv_destroy_qp", rc);
  if (int rc = ibv_destroy_cq(side.cq)) fail("ibv_destroy_cq", rc);
  if (int rc = ibv_dereg_mr(side.mr)) fail("ibv_dereg_mr", rc);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "pingpong: %s (usage: pingpong [-d DEVICE] [-n ITERATIONS])\n", why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "vfsim0";
  std::uint64_t iterations = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-d" && i + 1 < argc) {
      device_name = argv[++i];
    } else if (arg == "-n" && i + 1 < argc) {
      const std::string value = argv[++i];
      char* end = nullptr;
      errno = 0;
      iterations = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || value[0] == '-' || *end != '\0' || errno != 0 || iterations == 0) {
        usage(("-n '" + value + "': expected a number of iterations >= 1").c_str());
      }
    } else {
      usage(("unexpected argument '" + arg + "'").c_str());
    }
  }

  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) fail("ibv_get_device_list", errno);
  ibv_device* device = nullptr;
  for (int i = 0; i < count; ++i) {
    if (device_name == ibv_get_device_name(devices[i])) device = devices[i];
  }
  if (device == nullptr) {
    std::fprintf(stderr, "pingpong: -d '%s': no such RDMA device (expected one ibv_devices lists)\n",
                 device_name.c_str());
    return 2;
  }
  ibv_context* ctx = ibv_open_device(device);
  if (ctx == nullptr) fail("ibv_open_device", errno);
  ibv_port_attr port{};
  if (int rc = ibv_query_port(ctx, 1, &port)) fail("ibv_query_port", rc);
  // Addressed by LID alone: a RoCE port needs a GRH, which this example
  // leaves out to stay short.
  if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
    std::fprintf(stderr, "pingpong: -d '%s': an Ethernet (RoCE) port, expected InfiniBand\n",
                 device_name.c_str());
    return 2;
  }
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (pd == nullptr) fail("ibv_alloc_pd", errno);
  ibv_comp_channel* channel = ibv_create_comp_channel(ctx);
  if (channel == nullptr) fail("ibv_create_comp_channel", errno);

  Side a;
  Side b;
  a.name = "a";
  b.name = "b";
  create(a, ctx, pd, channel);
  create(b, ctx, pd, channel);
  connect(a, b.qp->qp_num, port.lid);
  connect(b, a.qp->qp_num, port.lid);

  // Each side's receive is posted before its peer sends to it.
  post_recv(a);
  post_recv(b);
  for (std::uint64_t i = 1; i <= iterations; ++i) {
    post_send(a, i);
    await_exchange(channel, a, b);
    if (b.buffers.recv != i) {
      std::fprintf(stderr, "pingpong: b received %llu, expected %llu\n",
                   static_cast<unsigned long long>(b.buffers.recv),
                   static_cast<unsigned long long>(i));
      return 1;
    }
    if (i < iterations) post_recv(b);
    post_send(b, i);
    await_exchange(channel, b, a);
    if (a.buffers.recv != i) {
      std::fprintf(stderr, "pingpong: a received %llu back, expected %llu\n",
                   static_cast<unsigned long long>(a.buffers.recv),
                   static_cast<unsigned long long>(i));
      return 1;
    }
    if (i < iterations) post_recv(a);
  }

  destroy(a);
  destroy(b);
  if (int rc = ibv_destroy_comp_channel(channel)) fail("ibv_destroy_comp_channel", rc);
  if (int rc = ibv_dealloc_pd(pd)) fail("ibv_dealloc_pd", rc);
  if (int rc = ibv_close_device(ctx)) fail("ibv_close_device", rc);
  ibv_free_device_list(devices);
  std::printf("pingpong: %llu round trips on %s\n", static_cast<unsigned long long>(iterations),
              device_name.c_str());
  return 0;
}

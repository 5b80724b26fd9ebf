// sample_rc: a small RC client/server in one process.
//
// A server thread and a client thread each own an RC QP on the same device,
// connected to each other. The client sends `--messages` pings and the
// server answers each with a pong; then the client RDMA-writes a buffer
// into the server's memory and tells it so with SEND_WITH_IMM; the server
// checks every byte. Both sides wait for completions the way a careful
// application does: arm the CQ, block in ibv_get_cq_event, ack, re-arm,
// then drain the CQ (so that a completion landing between the last poll and
// the re-arm is not stranded).
//
// Plain libibverbs: it runs on any RC-capable device, real or simulated
// (LD_PRELOAD=libverbfault.so). Exit status 0 when everything arrived intact.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kMessageBytes = 64;
constexpr int kWriteBytes = 4096;
constexpr uint32_t kWriteDoneImm = 0x5752;  // "WR"

struct Options {
  std::string device;  // empty: the first device listed
  int messages = 8;
  int gid_index = -1;  // -1: GRH only on a RoCE port, with GID index 1
};

[[noreturn]] void die(const char* what, int err) {
  std::fprintf(stderr, "sample_rc: %s failed: %s\n", what, std::strerror(err));
  std::exit(1);
}

// One side of the connection: QP, CQ with its completion channel, buffers.
struct Endpoint {
  const char* name = "";
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  std::vector<uint8_t> recv_buf = std::vector<uint8_t>(kMessageBytes * 4);
  std::vector<uint8_t> send_buf = std::vector<uint8_t>(kMessageBytes);
  std::vector<uint8_t> rdma_buf = std::vector<uint8_t>(kWriteBytes);
  ibv_mr* recv_mr = nullptr;
  ibv_mr* send_mr = nullptr;
  ibv_mr* rdma_mr = nullptr;
  int events = 0;
  std::vector<ibv_wc> pending;  // completions polled but not yet consumed

  void create(ibv_context* ctx, ibv_pd* pd) {
    channel = ibv_create_comp_channel(ctx);
    if (!channel) die("ibv_create_comp_channel", errno);
    cq = ibv_create_cq(ctx, 16, this, channel, 0);
    if (!cq) die("ibv_create_cq", errno);
    if (int rc = ibv_req_notify_cq(cq, 0)) die("ibv_req_notify_cq", rc);
    ibv_qp_init_attr init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    qp = ibv_create_qp(pd, &init);
    if (!qp) die("ibv_create_qp", errno);
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    recv_mr = ibv_reg_mr(pd, recv_buf.data(), recv_buf.size(), IBV_ACCESS_LOCAL_WRITE);
    send_mr = ibv_reg_mr(pd, send_buf.data(), send_buf.size(), 0);
    rdma_mr = ibv_reg_mr(pd, rdma_buf.data(), rdma_buf.size(), access);
    if (!recv_mr || !send_mr || !rdma_mr) die("ibv_reg_mr", errno);
  }

  // RoCE (link layer Ethernet) addresses the peer by GID (a GRH), not by LID.
  void connect(uint32_t remote_qpn, uint16_t remote_lid, const ibv_gid* remote_gid = nullptr,
               int gid_index = 0) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (int rc = ibv_modify_qp(
            qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      die("ibv_modify_qp(INIT)", rc);
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = remote_qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.dlid = remote_lid;
    a.ah_attr.port_num = 1;
    if (remote_gid != nullptr) {
      a.ah_attr.is_global = 1;
      a.ah_attr.grh.dgid = *remote_gid;
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index);
      a.ah_attr.grh.hop_limit = 1;
    }
    if (int rc =
            ibv_modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      die("ibv_modify_qp(RTR)", rc);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (int rc = ibv_modify_qp(qp, &a,
                               IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
      die("ibv_modify_qp(RTS)", rc);
  }

  void post_recv(int slot) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(recv_buf.data() + slot * kMessageBytes), kMessageBytes,
                recv_mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int rc = ibv_post_recv(qp, &wr, &bad)) die("ibv_post_recv", rc);
  }

  void post_send(const std::string& text, ibv_wr_opcode opcode = IBV_WR_SEND, uint32_t imm = 0) {
    std::snprintf(reinterpret_cast<char*>(send_buf.data()), kMessageBytes, "%s", text.c_str());
    ibv_sge sge{reinterpret_cast<uintptr_t>(send_buf.data()),
                static_cast<uint32_t>(text.size() + 1), send_mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 1000;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htobe32(imm);
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp, &wr, &bad)) die("ibv_post_send", rc);
  }

  void rdma_write(uint64_t remote_addr, uint32_t rkey) {
    for (int i = 0; i < kWriteBytes; ++i) rdma_buf[i] = static_cast<uint8_t>(i * 7 + 1);
    ibv_sge sge{reinterpret_cast<uintptr_t>(rdma_buf.data()), kWriteBytes, rdma_mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 2000;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;  // unsignaled: completed by the SEND behind it
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp, &wr, &bad)) die("ibv_post_send(RDMA_WRITE)", rc);
  }

  // The next completion, waiting for it through the completion channel.
  ibv_wc next_completion() {
    while (pending.empty()) {
      ibv_wc wc[4];
      int n = ibv_poll_cq(cq, 4, wc);
      if (n < 0) die("ibv_poll_cq", EIO);
      if (n > 0) {
        pending.assign(wc, wc + n);
        break;
      }
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx)) die("ibv_get_cq_event", errno);
      ++events;
      ibv_ack_cq_events(ev_cq, 1);
      // Re-arm before the next poll: a completion that lands in between is
      // either polled or raises the next event.
      if (int rc = ibv_req_notify_cq(ev_cq, 0)) die("ibv_req_notify_cq", rc);
    }
    ibv_wc wc = pending.front();
    pending.erase(pending.begin());
    if (wc.status != IBV_WC_SUCCESS) {
      std::fprintf(stderr, "sample_rc: %s: completion wr_id %llu failed: %s\n", name,
                   static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status));
      std::exit(1);
    }
    return wc;
  }

  ibv_wc expect(ibv_wc_opcode opcode) {
    ibv_wc wc = next_completion();
    if (wc.opcode != opcode) {
      std::fprintf(stderr, "sample_rc: %s: expected opcode %d, got %d\n", name, opcode, wc.opcode);
      std::exit(1);
    }
    return wc;
  }

  void destroy() {
    ibv_destroy_qp(qp);
    ibv_dereg_mr(recv_mr);
    ibv_dereg_mr(send_mr);
    ibv_dereg_mr(rdma_mr);
    if (int rc = ibv_destroy_cq(cq)) die("ibv_destroy_cq", rc);
    if (int rc = ibv_destroy_comp_channel(channel)) die("ibv_destroy_comp_channel", rc);
  }
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "-d" || arg == "--device") && i + 1 < argc) {
      o.device = argv[++i];
    } else if ((arg == "-n" || arg == "--messages") && i + 1 < argc) {
      char* end = nullptr;
      long n = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || n < 1 || n > 1000000) {
        std::fprintf(stderr, "sample_rc: --messages '%s': expected an integer 1..1000000\n",
                     argv[i]);
        std::exit(2);
      }
      o.messages = static_cast<int>(n);
    } else if ((arg == "-g" || arg == "--gid-index") && i + 1 < argc) {
      char* end = nullptr;
      long n = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || n < 0 || n > 255) {
        std::fprintf(stderr, "sample_rc: --gid-index '%s': expected an integer 0..255\n", argv[i]);
        std::exit(2);
      }
      o.gid_index = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "usage: sample_rc [--device NAME] [--messages N] [--gid-index N]\n");
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0)
    die("ibv_get_device_list (no RDMA device)", errno ? errno : ENODEV);
  ibv_device* device = nullptr;
  for (int i = 0; i < n; ++i)
    if (options.device.empty() || options.device == ibv_get_device_name(list[i])) {
      device = list[i];
      break;
    }
  if (device == nullptr) {
    std::fprintf(stderr, "sample_rc: device '%s' not found\n", options.device.c_str());
    return 1;
  }
  ibv_context* ctx = ibv_open_device(device);
  if (!ctx) die("ibv_open_device", errno);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (!pd) die("ibv_alloc_pd", errno);
  ibv_port_attr port{};
  if (int rc = ibv_query_port(ctx, 1, &port)) die("ibv_query_port", rc);

  Endpoint server, client;
  server.name = "server";
  client.name = "client";
  server.create(ctx, pd);
  client.create(ctx, pd);
  int gid_index = options.gid_index;
  if (gid_index < 0 && port.link_layer == IBV_LINK_LAYER_ETHERNET) gid_index = 1;
  ibv_gid gid{};
  if (gid_index >= 0 && ibv_query_gid(ctx, 1, gid_index, &gid)) die("ibv_query_gid", errno);
  const ibv_gid* grh = gid_index >= 0 ? &gid : nullptr;
  server.connect(client.qp->qp_num, port.lid, grh, gid_index);
  client.connect(server.qp->qp_num, port.lid, grh, gid_index);
  // Receives are posted before anything is sent (ibv_post_recv(3): not in
  // RESET), so no message meets an empty receive queue.
  for (int slot = 0; slot < 4; ++slot) {
    server.post_recv(slot);
    client.post_recv(slot);
  }
  std::printf("sample_rc: device %s, port LID %u, RC QP %u <-> QP %u\n",
              ibv_get_device_name(device), port.lid, client.qp->qp_num, server.qp->qp_num);

  const int messages = options.messages;
  bool verified = false;
  std::thread server_thread([&] {
    for (int i = 0; i < messages; ++i) {
      ibv_wc wc = server.expect(IBV_WC_RECV);
      int slot = static_cast<int>(wc.wr_id);
      std::string ping(reinterpret_cast<char*>(server.recv_buf.data() + slot * kMessageBytes));
      server.post_recv(slot);
      server.post_send("pong " + ping.substr(5));
      server.expect(IBV_WC_SEND);
    }
    // Tell the client where to write, then wait for its notification.
    char where[kMessageBytes];
    std::snprintf(
        where, sizeof where, "%llx %x",
        static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(server.rdma_buf.data())),
        server.rdma_mr->rkey);
    server.post_send(where);
    server.expect(IBV_WC_SEND);
    ibv_wc wc = server.expect(IBV_WC_RECV);
    if (!(wc.wc_flags & IBV_WC_WITH_IMM) || be32toh(wc.imm_data) != kWriteDoneImm) {
      std::fprintf(stderr, "sample_rc: server: expected the write notification\n");
      std::exit(1);
    }
    verified = true;
    for (int i = 0; i < kWriteBytes; ++i)
      if (server.rdma_buf[i] != static_cast<uint8_t>(i * 7 + 1)) verified = false;
  });

  int pongs = 0;
  for (int i = 0; i < messages; ++i) {
    client.post_send("ping " + std::to_string(i));
    client.expect(IBV_WC_SEND);
    ibv_wc wc = client.expect(IBV_WC_RECV);
    int slot = static_cast<int>(wc.wr_id);
    std::string pong(reinterpret_cast<char*>(client.recv_buf.data() + slot * kMessageBytes));
    client.post_recv(slot);
    if (pong == "pong " + std::to_string(i)) ++pongs;
  }
  ibv_wc wc = client.expect(IBV_WC_RECV);
  unsigned long long remote_addr = 0;
  unsigned rkey = 0;
  if (std::sscanf(reinterpret_cast<char*>(client.recv_buf.data() + wc.wr_id * kMessageBytes),
                  "%llx %x", &remote_addr, &rkey) != 2) {
    std::fprintf(stderr, "sample_rc: client: malformed buffer address message\n");
    return 1;
  }
  client.rdma_write(remote_addr, rkey);
  client.post_send("written", IBV_WR_SEND_WITH_IMM, kWriteDoneImm);
  client.expect(IBV_WC_SEND);
  server_thread.join();

  std::printf("sample_rc: exchanged %d pings and %d matching pongs\n", messages, pongs);
  std::printf("sample_rc: RDMA-wrote %d bytes into the server's buffer: %s\n", kWriteBytes,
              verified ? "verified" : "CORRUPT");
  std::printf("sample_rc: completion events: client %d, server %d\n", client.events, server.events);
  client.destroy();
  server.destroy();
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  const bool ok = pongs == messages && verified;
  std::printf("sample_rc: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

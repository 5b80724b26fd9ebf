// sample_rc: a small RC client/server in one process: one thread, or a
// thread per endpoint with --threads.
//
// A server endpoint and a client endpoint each own an RC QP and a CQ on the
// same device, connected to each other. The client sends `--messages` pings
// and the server answers each with a pong; then the server tells the client
// the address and rkey of its buffer, the client RDMA-writes into it and says
// so with SEND_WITH_IMM, and the server checks every byte.
//
// Why one thread by default: with a thread per endpoint, how many polls
// come back empty and how many completion events are raised depend on how
// the threads are scheduled, so the sequence of verbs calls changes from
// run to run. Here one progress loop drives both endpoints, and the calls
// depend only on the completions the device delivers: under
// libverbfault.so, the same seed gives the same trace.
//
// With --threads, the way a multi-threaded application is written: the
// server and the client each run their state machine on a thread of their
// own, each blocking on a completion channel of its own; main joins them.
// The threads share no state (they talk over the wire only), but their
// verbs calls interleave as they are scheduled: under the harness's thread
// scheduler (VERBFAULT_THREADS=pct and a seed) the seed fixes the
// interleaving, so the same seed again gives the same trace; elsewhere only
// the outcome is fixed (every pong, the write verified).
//
// Each endpoint is a state machine: an enum of what it waits for (a message
// or the completion of its send) and one handler per state that consumes that
// input, posts what comes next and returns the next state. When neither
// endpoint can move, the loop blocks on the completion channel both CQs
// share, the way a careful application waits: ibv_get_cq_event, ack, re-arm
// that CQ, then drain it. Polling after re-arming is what closes the
// lost-wakeup race: a completion that lands between the last poll and the
// re-arm is either drained now or raises the next event.
//
// --buggy turns on two classic bugs, so that a newcomer sees what a program
// that does not conform looks like in verbfault's reports (docs/reports.md): an error
// completion is filed by its opcode, with the status only logged (only
// wr_id, status, qp_num and vendor_err are valid in it: ibv_poll_cq(3)),
// and a poll that returns fewer completions than asked for is taken to mean
// the CQ is empty (a short poll strands the rest, and the program waits for
// an event that never comes).
//
// Plain libibverbs: it runs on any RC-capable device, real or simulated
// (LD_PRELOAD=libverbfault.so). Exit status 0 when everything arrived intact.
#include <infiniband/verbs.h>
#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr int kMessageBytes = 64;
constexpr int kRecvSlots = 4;
constexpr int kPollBatch = 4;
constexpr int kWriteBytes = 4096;
constexpr uint32_t kWriteDoneImm = 0x5752;  // "WR"

struct Options {
  std::string device;  // empty: the first device listed
  int messages = 8;
  int gid_index = -1;    // -1: GRH only on a RoCE port, with GID index 1
  bool threads = false;  // a thread per endpoint
  bool buggy = false;    // the two bugs above
};

// Set once by main before any thread starts, read-only after.
bool g_buggy = false;

[[noreturn]] void die(const char* what, int err) {
  std::fprintf(stderr, "sample_rc: %s failed: %s\n", what, std::strerror(err));
  std::exit(1);
}

// The input a protocol state waits for.
enum class Awaits { kMessage, kSendCompletion };

// One side of the connection: QP, CQ, buffers, and the completions polled
// from its CQ that its state machine has not consumed yet.
struct Endpoint {
  const char* name = "";
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  std::vector<uint8_t> recv_buf = std::vector<uint8_t>(kMessageBytes * kRecvSlots);
  std::vector<uint8_t> send_buf = std::vector<uint8_t>(kMessageBytes);
  std::vector<uint8_t> rdma_buf = std::vector<uint8_t>(kWriteBytes);
  ibv_mr* recv_mr = nullptr;
  ibv_mr* send_mr = nullptr;
  ibv_mr* rdma_mr = nullptr;
  int events = 0;  // completion events delivered for this CQ
  // Kept apart because a CQ keeps the order of each work queue, not the
  // order between a QP's send and receive queues: the client may poll the
  // pong before the send completion of its ping, and the server the next
  // ping before the send completion of its pong.
  std::deque<ibv_wc> messages;          // receive completions, in order
  std::deque<ibv_wc> send_completions;  // send completions, in order

  // `channel` is shared by both endpoints' CQs (one thread) or is the
  // endpoint's own (a thread each); cq_context names the endpoint, so an
  // event leads back to it.
  void create(ibv_context* ctx, ibv_pd* pd, ibv_comp_channel* channel) {
    cq = ibv_create_cq(ctx, 16, this, channel, 0);
    if (!cq) die("ibv_create_cq", errno);
    // Armed before anything is posted: the first completion raises an event.
    if (int rc = ibv_req_notify_cq(cq, 0)) die("ibv_req_notify_cq", rc);
    ibv_qp_init_attr init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = kRecvSlots;
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

  // One signaled send at a time: send_buf is the device's until the send
  // completion has been consumed, and every state machine waits for it
  // before its next send.
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

  // The text a receive completion delivered into its slot.
  std::string text(const ibv_wc& wc) const {
    const char* slot = reinterpret_cast<const char*>(recv_buf.data() + wc.wr_id * kMessageBytes);
    return std::string(slot, strnlen(slot, kMessageBytes));
  }

  // Files a polled completion under the input it is. An error completion
  // ends the program: only wr_id, status, qp_num and vendor_err are valid
  // in it (ibv_poll_cq(3)), so its opcode is not even looked at.
  void file(const ibv_wc& wc) {
    if (g_buggy && wc.status != IBV_WC_SUCCESS) {
      // The bug: logged, then filed by an opcode the provider need not have set.
      std::fprintf(stderr, "sample_rc: %s: completion wr_id %llu: %s (carrying on)\n", name,
                   static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status));
    } else if (wc.status != IBV_WC_SUCCESS) {
      std::fprintf(stderr, "sample_rc: %s: completion wr_id %llu failed: %s\n", name,
                   static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status));
      std::exit(1);
    }
    if (wc.opcode == IBV_WC_RECV) {
      messages.push_back(wc);
    } else if (wc.opcode == IBV_WC_SEND) {
      send_completions.push_back(wc);
    } else {
      std::fprintf(stderr, "sample_rc: %s: unexpected completion opcode %d\n", name, wc.opcode);
      std::exit(1);
    }
  }

  // Polls until the CQ is empty. Called after re-arming the CQ, so whatever
  // arrives after the last (empty) poll raises an event.
  void drain() {
    for (;;) {
      ibv_wc wc[kPollBatch];
      const int n = ibv_poll_cq(cq, kPollBatch, wc);
      if (n < 0) {
        // A negative value, not necessarily an errno (ibv_poll_cq(3)).
        std::fprintf(stderr, "sample_rc: %s: ibv_poll_cq failed: returned %d\n", name, n);
        std::exit(1);
      }
      if (n == 0) return;
      for (int i = 0; i < n; ++i) file(wc[i]);
      // The bug (--buggy): a poll that returns fewer than asked is taken to
      // mean the CQ is empty. ibv_poll_cq(3) promises no such thing.
      if (g_buggy && n < kPollBatch) return;
    }
  }

  // The oldest unconsumed completion of the kind `what`, if there is one.
  std::optional<ibv_wc> take(Awaits what) {
    std::deque<ibv_wc>& queue = what == Awaits::kMessage ? messages : send_completions;
    if (queue.empty()) return std::nullopt;
    const ibv_wc wc = queue.front();
    queue.pop_front();
    return wc;
  }

  void destroy() {
    ibv_destroy_qp(qp);
    ibv_dereg_mr(recv_mr);
    ibv_dereg_mr(send_mr);
    ibv_dereg_mr(rdma_mr);
    if (int rc = ibv_destroy_cq(cq)) die("ibv_destroy_cq", rc);
  }
};

// A state machine over an endpoint: a table gives, for each state but the
// last (kDone), the input it awaits and the handler that consumes it and
// returns the next state. advance() runs handlers while their input is
// there; it never waits.
template <typename Machine>
void advance(Machine& machine, Endpoint& endpoint) {
  while (machine.state != Machine::kDone) {
    const auto& step = Machine::kSteps[machine.state];
    std::optional<ibv_wc> wc = endpoint.take(step.awaits);
    if (!wc) return;
    machine.state = (machine.*step.handle)(*wc);
  }
}

// The server answers each ping with a pong, then sends the address and
// rkey of its RDMA buffer and waits for the client's write notification.
struct Server {
  enum State { kAwaitPing, kAwaitPongSent, kAwaitAddressSent, kAwaitNotice, kDone };

  Endpoint& ep;
  int messages;
  State state = kAwaitPing;
  int answered = 0;
  bool verified = false;

  State ping_received(const ibv_wc& wc) {
    const std::string ping = ep.text(wc);
    ep.post_recv(static_cast<int>(wc.wr_id));
    ep.post_send("pong " + ping.substr(std::min<size_t>(5, ping.size())));  // after "ping "
    return kAwaitPongSent;
  }

  State pong_sent(const ibv_wc&) {
    if (++answered < messages) return kAwaitPing;
    // Tell the client where to write.
    char where[kMessageBytes];
    std::snprintf(where, sizeof where, "%llx %x",
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(ep.rdma_buf.data())),
                  ep.rdma_mr->rkey);
    ep.post_send(where);
    return kAwaitAddressSent;
  }

  State address_sent(const ibv_wc&) { return kAwaitNotice; }

  // RC delivers in order: the data of the WRITE is in place before the
  // SEND_WITH_IMM posted behind it completes here.
  State notice_received(const ibv_wc& wc) {
    if (!(wc.wc_flags & IBV_WC_WITH_IMM) || be32toh(wc.imm_data) != kWriteDoneImm) {
      std::fprintf(stderr, "sample_rc: server: expected the write notification\n");
      std::exit(1);
    }
    verified = true;
    for (int i = 0; i < kWriteBytes; ++i)
      if (ep.rdma_buf[i] != static_cast<uint8_t>(i * 7 + 1)) verified = false;
    return kDone;
  }

  struct Step {
    Awaits awaits;
    State (Server::*handle)(const ibv_wc&);
  };
  static constexpr Step kSteps[kDone] = {
      {Awaits::kMessage, &Server::ping_received},        // kAwaitPing
      {Awaits::kSendCompletion, &Server::pong_sent},     // kAwaitPongSent
      {Awaits::kSendCompletion, &Server::address_sent},  // kAwaitAddressSent
      {Awaits::kMessage, &Server::notice_received},      // kAwaitNotice
  };
};

// The client sends the pings one at a time, each after the pong of the
// previous one, then RDMA-writes where the server said and notifies it.
struct Client {
  enum State { kAwaitPingSent, kAwaitPong, kAwaitAddress, kAwaitNoticeSent, kDone };

  Endpoint& ep;
  int messages;
  State state = kAwaitPingSent;
  int sent = 0;
  int pongs = 0;  // pongs that matched their ping

  // Sends the first ping: the one step no completion triggers.
  void start() { send_ping(); }

  void send_ping() { ep.post_send("ping " + std::to_string(sent++)); }

  State ping_sent(const ibv_wc&) { return kAwaitPong; }

  State pong_received(const ibv_wc& wc) {
    const std::string pong = ep.text(wc);
    ep.post_recv(static_cast<int>(wc.wr_id));
    if (pong == "pong " + std::to_string(sent - 1)) ++pongs;
    if (sent == messages) return kAwaitAddress;
    send_ping();
    return kAwaitPingSent;
  }

  State address_received(const ibv_wc& wc) {
    unsigned long long remote_addr = 0;
    unsigned rkey = 0;
    if (std::sscanf(ep.text(wc).c_str(), "%llx %x", &remote_addr, &rkey) != 2) {
      std::fprintf(stderr, "sample_rc: client: malformed buffer address message\n");
      std::exit(1);
    }
    ep.rdma_write(remote_addr, rkey);
    ep.post_send("written", IBV_WR_SEND_WITH_IMM, kWriteDoneImm);
    return kAwaitNoticeSent;
  }

  State notice_sent(const ibv_wc&) { return kDone; }

  struct Step {
    Awaits awaits;
    State (Client::*handle)(const ibv_wc&);
  };
  static constexpr Step kSteps[kDone] = {
      {Awaits::kSendCompletion, &Client::ping_sent},    // kAwaitPingSent
      {Awaits::kMessage, &Client::pong_received},       // kAwaitPong
      {Awaits::kMessage, &Client::address_received},    // kAwaitAddress
      {Awaits::kSendCompletion, &Client::notice_sent},  // kAwaitNoticeSent
  };
};

// Blocks for the next completion event on the shared channel, acknowledges
// it and re-arms its CQ; returns the endpoint whose CQ it was.
Endpoint& next_event(ibv_comp_channel* channel) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(channel, &cq, &context)) die("ibv_get_cq_event", errno);
  Endpoint& ep = *static_cast<Endpoint*>(context);
  ++ep.events;
  ibv_ack_cq_events(cq, 1);
  if (int rc = ibv_req_notify_cq(cq, 0)) die("ibv_req_notify_cq", rc);
  return ep;
}

// One endpoint's progress loop on a thread of its own (--threads): its
// state machine goes as far as its completions allow, then the thread
// blocks on its own channel, as the one-thread loop does on the shared one.
template <typename Machine>
struct Driver {
  Machine& machine;
  Endpoint& endpoint;
  ibv_comp_channel* channel;

  static void* run(void* raw) {
    Driver& d = *static_cast<Driver*>(raw);
    if constexpr (requires { d.machine.start(); }) d.machine.start();
    for (;;) {
      advance(d.machine, d.endpoint);
      if (d.machine.state == Machine::kDone) return nullptr;
      next_event(d.channel).drain();
    }
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
    } else if (arg == "--threads") {
      o.threads = true;
    } else if (arg == "--buggy") {
      o.buggy = true;
    } else {
      std::fprintf(stderr,
                   "usage: sample_rc [--device NAME] [--messages N] [--gid-index N] "
                   "[--threads] [--buggy]\n");
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line, so that its messages and stderr's interleave as they happen.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options options = parse(argc, argv);
  g_buggy = options.buggy;
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

  // One channel for both CQs, or one each: a thread waits on its own only.
  ibv_comp_channel* channel = ibv_create_comp_channel(ctx);
  ibv_comp_channel* client_channel = options.threads ? ibv_create_comp_channel(ctx) : channel;
  if (!channel || !client_channel) die("ibv_create_comp_channel", errno);
  Endpoint server, client;
  server.name = "server";
  client.name = "client";
  server.create(ctx, pd, channel);
  client.create(ctx, pd, client_channel);
  int gid_index = options.gid_index;
  if (gid_index < 0 && port.link_layer == IBV_LINK_LAYER_ETHERNET) gid_index = 1;
  ibv_gid gid{};
  if (gid_index >= 0 && ibv_query_gid(ctx, 1, gid_index, &gid)) die("ibv_query_gid", errno);
  const ibv_gid* grh = gid_index >= 0 ? &gid : nullptr;
  server.connect(client.qp->qp_num, port.lid, grh, gid_index);
  client.connect(server.qp->qp_num, port.lid, grh, gid_index);
  // Receives are posted before anything is sent (ibv_post_recv(3): not in
  // RESET), so no message meets an empty receive queue.
  for (int slot = 0; slot < kRecvSlots; ++slot) {
    server.post_recv(slot);
    client.post_recv(slot);
  }
  std::printf("sample_rc: device %s, port LID %u, RC QP %u <-> QP %u\n",
              ibv_get_device_name(device), port.lid, client.qp->qp_num, server.qp->qp_num);

  // The progress loop: both state machines go as far as their completions
  // allow; when neither can move, only the device can help, so wait for an
  // event and drain the CQ it names. Nothing here depends on timing.
  Server server_protocol{server, options.messages};
  Client client_protocol{client, options.messages};
  if (options.threads) {
    Driver<Server> server_driver{server_protocol, server, channel};
    Driver<Client> client_driver{client_protocol, client, client_channel};
    pthread_t threads[2];
    if (int rc = pthread_create(&threads[0], nullptr, Driver<Server>::run, &server_driver))
      die("pthread_create", rc);
    if (int rc = pthread_create(&threads[1], nullptr, Driver<Client>::run, &client_driver))
      die("pthread_create", rc);
    for (pthread_t thread : threads) pthread_join(thread, nullptr);
  } else {
    client_protocol.start();
    for (;;) {
      advance(server_protocol, server);
      advance(client_protocol, client);
      if (server_protocol.state == Server::kDone && client_protocol.state == Client::kDone) break;
      next_event(channel).drain();
    }
  }

  std::printf("sample_rc: exchanged %d pings and %d matching pongs\n", options.messages,
              client_protocol.pongs);
  std::printf("sample_rc: RDMA-wrote %d bytes into the server's buffer: %s\n", kWriteBytes,
              server_protocol.verified ? "verified" : "CORRUPT");
  std::printf("sample_rc: completion events: client %d, server %d\n", client.events, server.events);
  client.destroy();
  server.destroy();
  // Events read and acknowledged one by one; events raised but never read
  // (a completion drained before its event was taken) are not counted by
  // ibv_destroy_cq and go away with the channel.
  if (int rc = ibv_destroy_comp_channel(channel)) die("ibv_destroy_comp_channel", rc);
  if (client_channel != channel)
    if (int rc = ibv_destroy_comp_channel(client_channel)) die("ibv_destroy_comp_channel", rc);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  const bool ok = client_protocol.pongs == options.messages && server_protocol.verified;
  std::printf("sample_rc: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

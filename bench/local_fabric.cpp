// The local fabric's data path between two processes (docs/local-fabric.md,
// "The local fabric"), against what the same bytes cost without it.
//
// The benchmark starts a peer: itself again (/proc/self/exe --peer), as
// member 1 of a fabric named after this process (member 0). Both link the
// simulated device directly (verbfault_sim_direct, the baseline build of
// interposer_overhead), no harness. Measured in the same run, and printed
// at the end as ratios:
//   ratio BM_RemoteWrite64K/BM_Memcpy64K throughput: X (goal >= 0.3)
//     RDMA WRITEs of 64 KiB from this process's registered memory into the
//     peer's, a window of them in flight, polled to completion; the peer
//     calls no verb meanwhile (its device's service thread answers). The
//     baseline copies the same 64 KiB between two buffers of this process.
//   ratio BM_RemoteSendPingPong64/BM_PipePingPong64 latency: X (goal <= 5)
//     a 64-byte SEND to the peer, which answers with a 64-byte SEND, both
//     polled; the baseline sends 64 bytes through a pipe to the peer, which
//     writes them back through another.
// Real time throughout: the work is shared by two processes.
#include "verbfault/sim/provider.h"
#include "verbfault_testing/rc_connect.h"

#include "bench_support.h"
#include "fabric_files.h"

#include <benchmark/benchmark.h>
#include <infiniband/verbs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace sim = verbfault::sim;

constexpr std::size_t k64K = 64 * 1024;
constexpr std::size_t kMessage = 64;
// RDMA WRITEs in flight at once (the send queue holds twice as many): as
// ib_write_bw keeps by default (its --tx-depth, 128).
constexpr int kWindow = 128;
// Receives the ping-pong keeps posted on each side.
constexpr int kReceives = 8;
// A ping-pong message whose first byte is this ends the peer's loop.
constexpr uint8_t kStop = 0xff;

bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size != 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t size) {
  char* p = static_cast<char*>(data);
  while (size != 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

using verbfault::bench::Buffer;

// What each side tells the other before connecting.
struct Card {
  uint16_t lid = 0;
  uint32_t write_qpn = 0;
  uint32_t pingpong_qpn = 0;
  uint64_t target = 0;  // the 64 KiB a WRITE lands in (the peer's)
  uint32_t rkey = 0;
};

// One side's verbs objects: a QP for the WRITEs (with a 64 KiB buffer: the
// source here, the target at the peer) and one for the ping-pong (64-byte
// send buffer, kReceives receive slots), each with its CQ.
class Side {
 public:
  Side() { open(); }
  void open() {
    std::span<ibv_device* const> devices = sim::devices();
    if (devices.empty()) return fail("no simulated device (VERBFAULT_FABRIC?)");
    context_ = sim::open_device(devices[0]);
    if (context_ == nullptr) return fail("open_device failed");
    ibv_port_attr port{};
    if (sim::query_port(context_, 1, &port) != 0) return fail("query_port failed");
    lid_ = port.lid;
    pd_ = sim::alloc_pd(context_);
    if (pd_ == nullptr) return fail("alloc_pd failed");
    constexpr unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    bulk_mr = reg(bulk, kAccess);
    small_mr = reg(small, IBV_ACCESS_LOCAL_WRITE);
    write_cq = cq();
    pingpong_cq = cq();
    write_qp = qp(write_cq, 2 * kWindow);
    pingpong_qp = qp(pingpong_cq, 2 * kReceives);
  }
  ~Side() {
    for (ibv_qp* qp : {pingpong_qp, write_qp})
      if (qp != nullptr) sim::destroy_qp(qp);
    for (ibv_cq* cq : {pingpong_cq, write_cq})
      if (cq != nullptr) sim::destroy_cq(cq);
    for (ibv_mr* mr : {small_mr, bulk_mr})
      if (mr != nullptr) sim::dereg_mr(mr);
    if (pd_ != nullptr) sim::dealloc_pd(pd_);
    if (context_ != nullptr) sim::close_device(context_);
  }
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;

  const std::string& error() const { return error_; }
  Card card() const {
    Card c;
    c.lid = lid_;
    if (error_.empty()) {
      c.write_qpn = write_qp->qp_num;
      c.pingpong_qpn = pingpong_qp->qp_num;
      c.target = bulk.address();
      c.rkey = bulk_mr->rkey;
    }
    return c;
  }

  void connect(const Card& peer) {
    if (!error_.empty()) return;
    peer_ = peer;
    for (auto [qp, qpn] : {std::pair{write_qp, peer.write_qpn}, {pingpong_qp, peer.pingpong_qpn}}) {
      const verbfault::testing::RcConnectOptions options{
          .dest_qp_num = qpn, .dlid = peer.lid, .min_rnr_timer = 1, .modify_qp = sim::modify_qp};
      if (verbfault::testing::rc_connect(qp, options) != 0) return fail("QP did not reach RTS");
    }
    for (int i = 0; i < kReceives; ++i)
      if (!post_receive(i)) return fail("post_recv failed");
  }

  // Receive slot i: bytes 64 * (1 + i) of `small` (slot 0 of it sends).
  bool post_receive(int slot) {
    ibv_sge sge{small.address(kMessage * (1 + static_cast<std::size_t>(slot))), kMessage,
                small_mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(pingpong_qp, &wr, &bad) == 0;
  }

  bool send_message(uint8_t first) {
    small.bytes.get()[0] = static_cast<char>(first);
    ibv_sge sge{small.address(), kMessage, small_mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = kSendId;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(pingpong_qp, &wr, &bad) == 0;
  }

  // Polls the ping-pong CQ until a message came and every SEND posted is
  // complete; reposts the receive. The message's first byte, or -1.
  int await_message() {
    int first = -2;
    ibv_wc wc[4];
    while (first == -2 || sends_out_ != 0) {
      const int n = ibv_poll_cq(pingpong_cq, 4, wc);
      if (n < 0) return -1;
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) return -1;
        if (wc[i].wr_id == kSendId) {
          --sends_out_;
          continue;
        }
        const int slot = static_cast<int>(wc[i].wr_id);
        // A stop is not overwritten by a message behind it.
        const int byte = static_cast<uint8_t>(
            small.bytes.get()[kMessage * (1 + static_cast<std::size_t>(slot))]);
        if (first != kStop) first = byte;
        if (!post_receive(slot)) return -1;
      }
    }
    return first;
  }
  // One round trip from this side. False when something failed.
  bool ping() {
    if (!send_message(1)) return false;
    ++sends_out_;
    return await_message() >= 0;
  }
  // The peer's loop: answers every message until a kStop one.
  bool serve_pingpong() {
    for (;;) {
      const int first = await_message();
      if (first < 0) return false;
      if (first == kStop) return true;
      if (!send_message(1)) return false;
      ++sends_out_;
    }
  }
  bool stop_pingpong() {
    if (!send_message(kStop)) return false;
    ++sends_out_;
    ibv_wc wc;
    while (sends_out_ != 0) {
      const int n = ibv_poll_cq(pingpong_cq, 1, &wc);
      if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) return false;
      if (n == 1 && wc.wr_id == kSendId) --sends_out_;
    }
    return true;
  }

  // RDMA WRITE of `bulk` into the peer's target.
  bool post_write() {
    ibv_sge sge{bulk.address(), static_cast<uint32_t>(k64K), bulk_mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 7;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = peer_.target;
    wr.wr.rdma.rkey = peer_.rkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(write_qp, &wr, &bad) == 0;
  }
  // Completed WRITEs polled now (-1: an error).
  int reap_writes() {
    ibv_wc wc[kWindow];
    const int n = ibv_poll_cq(write_cq, kWindow, wc);
    for (int i = 0; i < n; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) return -1;
    return n;
  }

  Buffer bulk{k64K};
  Buffer small{kMessage * (1 + kReceives)};
  ibv_mr* bulk_mr = nullptr;
  ibv_mr* small_mr = nullptr;
  ibv_cq* write_cq = nullptr;
  ibv_cq* pingpong_cq = nullptr;
  ibv_qp* write_qp = nullptr;
  ibv_qp* pingpong_qp = nullptr;

 private:
  static constexpr uint64_t kSendId = 1000;

  void fail(const char* what) {
    if (error_.empty()) error_ = what;
  }
  ibv_mr* reg(const Buffer& buffer, unsigned access) {
    if (!error_.empty()) return nullptr;
    ibv_mr* mr = buffer.bytes == nullptr
                     ? nullptr
                     : sim::reg_mr(pd_, buffer.bytes.get(), buffer.size, buffer.address(), access);
    if (mr == nullptr) fail("reg_mr failed");
    return mr;
  }
  ibv_cq* cq() {
    if (!error_.empty()) return nullptr;
    ibv_cq* cq = sim::create_cq(context_, 4 * kWindow, nullptr, nullptr, 0);
    if (cq == nullptr) fail("create_cq failed");
    return cq;
  }
  ibv_qp* qp(ibv_cq* cq, uint32_t depth) {
    if (!error_.empty()) return nullptr;
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = depth;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp* qp = sim::create_qp(pd_, &init);
    if (qp == nullptr) fail("create_qp failed");
    return qp;
  }

  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint16_t lid_ = 0;
  Card peer_;
  int sends_out_ = 0;
  std::string error_;
};

// Commands on the control pipe, parent to peer.
enum Command : char { kPipePingPong = 'p', kSendPingPong = 's', kQuit = 'q' };

// The peer: member 1. Its main thread waits on the control pipe (no verb
// called while the parent's WRITEs land), and runs the ping-pongs asked for.
int run_peer(int from_parent, int to_parent) {
  Side side;
  const Card mine = side.card();
  Card theirs;
  if (!write_all(to_parent, &mine, sizeof mine) || !read_all(from_parent, &theirs, sizeof theirs))
    return 2;
  side.connect(theirs);
  const char ready = side.error().empty() ? 'y' : 'n';
  if (!write_all(to_parent, &ready, 1) || ready != 'y') return 2;
  for (;;) {
    char command = 0;
    if (!read_all(from_parent, &command, 1)) return 2;
    if (command == kQuit) return 0;
    if (command == kSendPingPong) {
      if (!side.serve_pingpong()) return 2;
      const char stopped = 'k';
      if (!write_all(to_parent, &stopped, 1)) return 2;
    } else if (command == kPipePingPong) {
      uint8_t message[kMessage];
      for (;;) {
        if (!read_all(from_parent, message, sizeof message)) return 2;
        if (message[0] == kStop) break;
        if (!write_all(to_parent, message, sizeof message)) return 2;
      }
    }
  }
}

// The parent's end: the peer process, its pipes and this side's objects.
class World {
 public:
  World() { start(); }
  void start() {
    int down[2];
    int up[2];
    if (pipe(down) != 0 || pipe(up) != 0) {
      error_ = "pipe failed";
      return;
    }
    std::fflush(nullptr);
    peer_ = fork();
    if (peer_ == 0) {
      ::close(down[1]);
      ::close(up[0]);
      setenv("VERBFAULT_PROC", "1", 1);
      const std::string in = std::to_string(down[0]);
      const std::string out = std::to_string(up[1]);
      execl("/proc/self/exe", "local_fabric", "--peer", in.c_str(), out.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    ::close(down[0]);
    ::close(up[1]);
    to_peer_ = down[1];
    from_peer_ = up[0];
    side_ = std::make_unique<Side>();
    Card theirs;
    const Card mine = side_->card();
    if (!read_all(from_peer_, &theirs, sizeof theirs) || !write_all(to_peer_, &mine, sizeof mine))
      return fail("the peer did not start");
    side_->connect(theirs);
    char ready = 0;
    if (!read_all(from_peer_, &ready, 1) || ready != 'y') return fail("the peer's setup failed");
    if (!side_->error().empty()) return fail(side_->error().c_str());
  }
  ~World() {
    if (to_peer_ >= 0) {
      const char quit = kQuit;
      write_all(to_peer_, &quit, 1);
      ::close(to_peer_);
    }
    if (peer_ > 0) waitpid(peer_, nullptr, 0);
    if (from_peer_ >= 0) ::close(from_peer_);
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const std::string& error() const { return error_; }
  Side& side() { return *side_; }
  bool command(Command c) { return write_all(to_peer_, &c, 1); }
  // The peer says it left a ping-pong loop.
  bool stopped() {
    char c = 0;
    return read_all(from_peer_, &c, 1) && c == 'k';
  }
  // One pipe round trip of a 64-byte message.
  bool pipe_round_trip(uint8_t first) {
    uint8_t message[kMessage] = {first};
    if (!write_all(to_peer_, message, sizeof message)) return false;
    return first == kStop || read_all(from_peer_, message, sizeof message);
  }

 private:
  void fail(const char* what) {
    if (error_.empty()) error_ = what;
  }
  pid_t peer_ = -1;
  int to_peer_ = -1;
  int from_peer_ = -1;
  std::unique_ptr<Side> side_;
  std::string error_;
};

std::unique_ptr<World> g_world;

World* setup(benchmark::State& state) {
  if (g_world == nullptr) g_world = std::make_unique<World>();
  if (!g_world->error().empty()) {
    state.SkipWithError(g_world->error().c_str());
    return nullptr;
  }
  return g_world.get();
}

// An iteration is one WRITE completed, with kWindow kept in flight.
void BM_RemoteWrite64K(benchmark::State& state) {
  World* w = setup(state);
  if (w == nullptr) return;
  Side& side = w->side();
  int in_flight = 0;
  int completed = 0;  // polled, not yet counted as an iteration
  for (auto _ : state) {
    while (in_flight < kWindow) {
      if (!side.post_write()) {
        state.SkipWithError("post_send failed");
        return;
      }
      ++in_flight;
    }
    while (completed == 0) {
      completed = side.reap_writes();
      if (completed < 0) {
        state.SkipWithError("an RDMA WRITE completed in error");
        return;
      }
      in_flight -= completed;
    }
    --completed;
  }
  while (in_flight > 0) {
    const int done = side.reap_writes();
    if (done < 0) break;
    in_flight -= done;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k64K);
}
BENCHMARK(BM_RemoteWrite64K)->UseRealTime();

void BM_Memcpy64K(benchmark::State& state) {
  Buffer from(k64K);
  Buffer to(k64K);
  if (from.bytes == nullptr || to.bytes == nullptr) {
    state.SkipWithError("aligned_alloc failed");
    return;
  }
  char* source = from.bytes.get();
  char* target = to.bytes.get();
  for (auto _ : state) {
    benchmark::DoNotOptimize(source);
    std::memcpy(target, source, k64K);
    benchmark::DoNotOptimize(target);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k64K);
}
BENCHMARK(BM_Memcpy64K)->UseRealTime();

void BM_RemoteSendPingPong64(benchmark::State& state) {
  World* w = setup(state);
  if (w == nullptr) return;
  if (!w->command(kSendPingPong)) {
    state.SkipWithError("the peer is gone");
    return;
  }
  for (auto _ : state) {
    if (!w->side().ping()) {
      state.SkipWithError("the SEND ping-pong failed");
      break;
    }
  }
  // The next run starts when the peer is back at its commands.
  if (!w->side().stop_pingpong() || !w->stopped()) state.SkipWithError("the peer did not stop");
}
BENCHMARK(BM_RemoteSendPingPong64)->UseRealTime();

void BM_PipePingPong64(benchmark::State& state) {
  World* w = setup(state);
  if (w == nullptr) return;
  if (!w->command(kPipePingPong)) {
    state.SkipWithError("the peer is gone");
    return;
  }
  for (auto _ : state) {
    if (!w->pipe_round_trip(1)) {
      state.SkipWithError("the pipe ping-pong failed");
      break;
    }
  }
  w->pipe_round_trip(kStop);
}
BENCHMARK(BM_PipePingPong64)->UseRealTime();

// Prints the two ratios of the runs collected.
class RatioReporter : public verbfault::bench::RunCollector {
 public:
  // Same bytes per iteration: throughput ratio = inverse time ratio.
  void PrintRatios() const {
    const double write = real_time("BM_RemoteWrite64K");
    const double copy = real_time("BM_Memcpy64K");
    if (write > 0 && copy > 0)
      std::printf("ratio BM_RemoteWrite64K/BM_Memcpy64K throughput: %.2f (goal >= 0.3)\n",
                  copy / write);
    const double send = real_time("BM_RemoteSendPingPong64");
    const double pipe = real_time("BM_PipePingPong64");
    if (send > 0 && pipe > 0)
      std::printf("ratio BM_RemoteSendPingPong64/BM_PipePingPong64 latency: %.2f (goal <= 5)\n",
                  send / pipe);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--peer") == 0)
    return run_peer(std::atoi(argv[2]), std::atoi(argv[3]));
  // A fabric of this run's own, this process member 0; the peer inherits
  // the name (and gets member 1). Before the device is first listed.
  const std::string fabric = "bench-" + std::to_string(getpid());
  setenv("VERBFAULT_FABRIC", fabric.c_str(), 1);
  setenv("VERBFAULT_PROC", "0", 1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  g_world.reset();
  reporter.PrintRatios();
  benchmark::Shutdown();
  verbfault::sim::wire::remove_status_table(fabric);
  return 0;
}

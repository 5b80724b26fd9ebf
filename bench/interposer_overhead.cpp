// The interposer's cost on the hottest verbs, and the simulated device's
// data path against memcpy.
//
// Each verbs benchmark runs twice: on the simulated provider linked in
// directly (its ops as the provider installed them: the baseline), and
// through libverbfault.so (the trampolines in context->ops, with whatever
// harness the environment switched on when the library loaded). Machines
// are noisy, so the results are ratios of two measurements of the same run,
// printed at the end:
//   ratio NAME interposed/direct (MODE): X
//   ratio BM_RdmaWrite64K/BM_Memcpy64K throughput: X
// MODE is "no plan", "harness active" or "harness active, trace file".
#include "verbfault/sim/provider.h"
#include "verbfault_testing/rc_connect.h"

#include "bench_support.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <time.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t k64K = 64 * 1024;

// The verbs entry points of one way of reaching the provider. The fast
// paths (ibv_post_send, ibv_post_recv, ibv_poll_cq) are inline in verbs.h
// and jump through the context's ops, so they need no entry here.
struct Calls {
  ibv_context* (*open)(ibv_device*);
  int (*close)(ibv_context*);
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
  ibv_device* device;
};

ibv_mr* direct_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return verbfault::sim::reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                                static_cast<unsigned>(access));
}
ibv_mr* interposed_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr(pd, addr, length, access);
}
// ibv_query_port is a macro over an inline function in verbs.h.
int interposed_query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  return ibv_query_port(context, port, attr);
}

Calls direct() {
  namespace sim = verbfault::sim;
  return {sim::open_device, sim::close_device, sim::query_port,  sim::alloc_pd,   sim::dealloc_pd,
          direct_reg_mr,    sim::dereg_mr,     sim::create_cq,   sim::destroy_cq, sim::create_qp,
          sim::modify_qp,   sim::destroy_qp,   sim::devices()[0]};
}

// Null device when libverbfault.so does not list vfsim0.
Calls interposed() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_device* device = nullptr;
  for (int i = 0; i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), "vfsim0") == 0) device = list[i];
  // The device outlives the list (ibv_get_device_list(3): devices stay valid
  // while a context of theirs is open).
  return {ibv_open_device, ibv_close_device,  interposed_query_port, ibv_alloc_pd,
          ibv_dealloc_pd,  interposed_reg_mr, ibv_dereg_mr,          ibv_create_cq,
          ibv_destroy_cq,  ibv_create_qp,     ibv_modify_qp,         ibv_destroy_qp,
          device};
}

using verbfault::bench::Buffer;

// Everything the verbs benchmarks use, on one context of vfsim0 reached one
// way: a loopback RC QP (connected to itself) for the small write, a pair
// of RC QPs connected to each other for SEND/RECV, a loopback QP for the
// 64 KiB write, each with its own CQ and registered buffer. Setup failures
// are kept, not thrown: each benchmark skips with the first one.
class World {
 public:
  explicit World(const Calls& calls) : calls_(calls) {
    open();

    constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    small_mr = register_buffer(small, kAccess);
    small_cq = create_cq();
    small_qp = create_qp(small_cq);
    connect(small_qp, small_qp);

    pair_mr = register_buffer(pair, IBV_ACCESS_LOCAL_WRITE);
    pair_cq = create_cq();
    sender = create_qp(pair_cq);
    receiver = create_qp(pair_cq);
    connect(sender, receiver);
    connect(receiver, sender);

    bulk_mr = register_buffer(bulk, kAccess);
    bulk_cq = create_cq();
    bulk_qp = create_qp(bulk_cq);
    connect(bulk_qp, bulk_qp);
  }

  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Objects alive at exit are a finding of the harness's checks
  // (resource.leak_at_exit), so the run cleans up like a correct program.
  ~World() {
    for (auto it = qps_.rbegin(); it != qps_.rend(); ++it) calls_.destroy_qp(*it);
    for (auto it = cqs_.rbegin(); it != cqs_.rend(); ++it) calls_.destroy_cq(*it);
    for (auto it = mrs_.rbegin(); it != mrs_.rend(); ++it) calls_.dereg_mr(*it);
    if (pd_ != nullptr) calls_.dealloc_pd(pd_);
    if (context_ != nullptr) calls_.close(context_);
  }

  // Empty when the setup succeeded.
  const std::string& error() const { return error_; }

  Buffer small{64};
  Buffer pair{128};       // bytes 0..63 are sent, 64..127 receive
  Buffer bulk{2 * k64K};  // the first half is written into the second
  ibv_mr* small_mr = nullptr;
  ibv_mr* pair_mr = nullptr;
  ibv_mr* bulk_mr = nullptr;
  ibv_cq* small_cq = nullptr;
  ibv_cq* pair_cq = nullptr;
  ibv_cq* bulk_cq = nullptr;
  ibv_qp* small_qp = nullptr;
  ibv_qp* sender = nullptr;
  ibv_qp* receiver = nullptr;
  ibv_qp* bulk_qp = nullptr;

 private:
  void fail(const char* what) {
    if (error_.empty()) error_ = what;
  }

  void open() {
    if (calls_.device == nullptr) return fail("vfsim0 not listed by libverbfault.so");
    context_ = calls_.open(calls_.device);
    if (context_ == nullptr) return fail("ibv_open_device failed");
    ibv_port_attr port{};
    if (calls_.query_port(context_, 1, &port) != 0) return fail("ibv_query_port failed");
    lid_ = port.lid;
    pd_ = calls_.alloc_pd(context_);
    if (pd_ == nullptr) return fail("ibv_alloc_pd failed");
  }

  ibv_mr* register_buffer(const Buffer& buffer, int access) {
    if (!error_.empty()) return nullptr;
    ibv_mr* mr = nullptr;
    if (buffer.bytes == nullptr)
      fail("aligned_alloc failed");
    else if ((mr = calls_.reg_mr(pd_, buffer.bytes.get(), buffer.size, access)) == nullptr)
      fail("ibv_reg_mr failed");
    else
      mrs_.push_back(mr);
    return mr;
  }

  ibv_cq* create_cq() {
    if (!error_.empty()) return nullptr;
    ibv_cq* cq = calls_.create_cq(context_, 256, nullptr, nullptr, 0);
    if (cq == nullptr)
      fail("ibv_create_cq failed");
    else
      cqs_.push_back(cq);
    return cq;
  }

  ibv_qp* create_qp(ibv_cq* cq) {
    if (!error_.empty()) return nullptr;
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 64;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp* qp = calls_.create_qp(pd_, &init);
    if (qp == nullptr)
      fail("ibv_create_qp failed");
    else
      qps_.push_back(qp);
    return qp;
  }

  // RESET -> INIT -> RTR -> RTS, connected to `peer` on this device's LID,
  // through this way's modify_qp.
  void connect(ibv_qp* qp, ibv_qp* peer) {
    if (!error_.empty()) return;
    const verbfault::testing::RcConnectOptions options{.dest_qp_num = peer->qp_num,
                                                       .dlid = lid_,
                                                       .access = IBV_ACCESS_REMOTE_WRITE,
                                                       .min_rnr_timer = 1,
                                                       .modify_qp = calls_.modify_qp};
    if (verbfault::testing::rc_connect(qp, options) != 0) fail("QP did not reach RTS");
  }

  Calls calls_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint16_t lid_ = 0;
  std::string error_;
  std::vector<ibv_mr*> mrs_;
  std::vector<ibv_cq*> cqs_;
  std::vector<ibv_qp*> qps_;
};

// Built on first use, destroyed at the end of main (before the harness's
// end-of-run checks).
std::unique_ptr<World> g_worlds[2];

World& world(bool through_interposer) {
  std::unique_ptr<World>& w = g_worlds[through_interposer ? 1 : 0];
  if (w == nullptr) w = std::make_unique<World>(through_interposer ? interposed() : direct());
  return *w;
}

// The world of this benchmark's mode, or nullptr after skipping it with the
// setup's error.
World* setup(benchmark::State& state) {
  World& w = world(state.range(0) != 0);
  if (!w.error().empty()) {
    state.SkipWithError(w.error().c_str());
    return nullptr;
  }
  return &w;
}

// Polls `cq` until `want` completions came. False when a poll fails.
bool reap(ibv_cq* cq, ibv_wc* wc, int want) {
  for (int got = 0; got < want;) {
    const int n = ibv_poll_cq(cq, want - got, wc + got);
    if (n < 0) return false;
    got += n;
  }
  return true;
}

// One signaled RDMA WRITE of `length` bytes from `from` to `to` (iova,
// both in `mr`) on a loopback QP, and its completion. Null on success, else
// what failed.
const char* write_and_reap(ibv_qp* qp, ibv_cq* cq, ibv_mr* mr, uint64_t from, uint64_t to,
                           uint32_t length) {
  ibv_sge sge{from, length, mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = to;
  wr.wr.rdma.rkey = mr->rkey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qp, &wr, &bad) != 0) return "ibv_post_send failed";
  ibv_wc wc;
  if (!reap(cq, &wc, 1)) return "ibv_poll_cq failed";
  if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RDMA_WRITE || wc.wr_id != 1)
    return "RDMA WRITE did not complete successfully";
  return nullptr;
}

// A 64-byte SEND from `sender` into a receive posted just before on
// `receiver`, and both completions. Null on success, else what failed.
const char* send_recv_round_trip(World& w) {
  ibv_sge recv_sge{w.pair.address(64), 64, w.pair_mr->lkey};
  ibv_recv_wr recv{};
  recv.wr_id = 2;
  recv.sg_list = &recv_sge;
  recv.num_sge = 1;
  ibv_recv_wr* bad_recv = nullptr;
  if (ibv_post_recv(w.receiver, &recv, &bad_recv) != 0) return "ibv_post_recv failed";
  ibv_sge send_sge{w.pair.address(0), 64, w.pair_mr->lkey};
  ibv_send_wr send{};
  send.wr_id = 1;
  send.sg_list = &send_sge;
  send.num_sge = 1;
  send.opcode = IBV_WR_SEND;
  send.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad_send = nullptr;
  if (ibv_post_send(w.sender, &send, &bad_send) != 0) return "ibv_post_send failed";
  // Both completions go to the one CQ, in either order.
  ibv_wc wc[2];
  if (!reap(w.pair_cq, wc, 2)) return "ibv_poll_cq failed";
  bool sent = false;
  bool received = false;
  for (const ibv_wc& c : wc) {
    if (c.status != IBV_WC_SUCCESS) return "SEND/RECV completed in error";
    sent |= c.wr_id == 1 && c.opcode == IBV_WC_SEND;
    received |= c.wr_id == 2 && c.opcode == IBV_WC_RECV && c.byte_len == 64;
  }
  return sent && received ? nullptr : "unexpected SEND/RECV completions";
}

void BM_PollCqEmpty(benchmark::State& state) {
  World* w = setup(state);
  if (w == nullptr) return;
  ibv_wc wc;
  for (auto _ : state) {
    const int n = ibv_poll_cq(w->small_cq, 1, &wc);
    if (n != 0) {
      state.SkipWithError("ibv_poll_cq of an empty CQ did not return 0");
      break;
    }
  }
}
BENCHMARK(BM_PollCqEmpty)->ArgName("interposed")->Arg(0)->Arg(1);

// An 8-byte RDMA WRITE and its poll: the cost of the post and poll paths.
void BM_PostSendAndPoll(benchmark::State& state) {
  World* w = setup(state);
  if (w == nullptr) return;
  for (auto _ : state) {
    if (const char* error = write_and_reap(w->small_qp, w->small_cq, w->small_mr,
                                           w->small.address(0), w->small.address(32), 8)) {
      state.SkipWithError(error);
      break;
    }
  }
}
BENCHMARK(BM_PostSendAndPoll)->ArgName("interposed")->Arg(0)->Arg(1);

void BM_SendRecvRoundTrip64(benchmark::State& state) {
  World* w = setup(state);
  if (w == nullptr) return;
  for (auto _ : state) {
    if (const char* error = send_recv_round_trip(*w)) {
      state.SkipWithError(error);
      break;
    }
  }
}
BENCHMARK(BM_SendRecvRoundTrip64)->ArgName("interposed")->Arg(0)->Arg(1);

// The data path: 64 KiB from one half of a registered buffer into the
// other, in bytes per second (compared with BM_Memcpy64K).
void BM_RdmaWrite64K(benchmark::State& state) {
  World* w = setup(state);
  if (w == nullptr) return;
  for (auto _ : state) {
    if (const char* error = write_and_reap(w->bulk_qp, w->bulk_cq, w->bulk_mr, w->bulk.address(0),
                                           w->bulk.address(k64K), k64K)) {
      state.SkipWithError(error);
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k64K);
}
BENCHMARK(BM_RdmaWrite64K)->ArgName("interposed")->Arg(0)->Arg(1);

// What the data path is measured against: the same 64 KiB copy between the
// two halves of a buffer laid out as BM_RdmaWrite64K's.
void BM_Memcpy64K(benchmark::State& state) {
  Buffer buffer(2 * k64K);
  if (buffer.bytes == nullptr) {
    state.SkipWithError("aligned_alloc failed");
    return;
  }
  char* from = buffer.bytes.get();
  char* to = from + k64K;
  for (auto _ : state) {
    benchmark::DoNotOptimize(from);
    std::memcpy(to, from, k64K);
    benchmark::DoNotOptimize(to);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k64K);
}
BENCHMARK(BM_Memcpy64K);

// The harness mode libverbfault.so started in: it reads the environment
// once, when it loads (docs/using.md, "Environment"): a seed, plan, rules or trace
// file switch it on.
const char* harness_mode() {
  const bool trace = std::getenv("VERBFAULT_TRACE") != nullptr;
  const bool active = trace || std::getenv("VERBFAULT_SEED") || std::getenv("VERBFAULT_FAULTS") ||
                      std::getenv("VERBFAULT_PLAN");
  return trace ? "harness active, trace file" : active ? "harness active" : "no plan";
}

// Prints the ratios of the runs collected.
class RatioReporter : public verbfault::bench::RunCollector {
 public:
  void PrintRatios() const {
    for (const char* name :
         {"BM_PollCqEmpty", "BM_PostSendAndPoll", "BM_SendRecvRoundTrip64", "BM_RdmaWrite64K"}) {
      auto direct = times_.find(std::string(name) + "/interposed:0");
      auto wrapped = times_.find(std::string(name) + "/interposed:1");
      if (direct == times_.end() || wrapped == times_.end() || direct->second <= 0) continue;
      std::printf("ratio %s interposed/direct (%s): %.2f\n", name, harness_mode(),
                  wrapped->second / direct->second);
    }
    auto write = rates_.find("BM_RdmaWrite64K/interposed:0");
    auto copy = rates_.find("BM_Memcpy64K");
    if (write != rates_.end() && copy != rates_.end() && copy->second > 0)
      std::printf("ratio BM_RdmaWrite64K/BM_Memcpy64K throughput: %.2f\n",
                  write->second / copy->second);
  }
};

// BM_PollCqEmpty spins on a CQ that nothing will ever complete into, which
// the liveness check liveness.spinning would end after 2^20 empty polls:
// scripts/bench.sh switches that check off (VERBFAULT_CHECKS), every other
// check runs. A thread parked for the length of the run makes this a
// program of two threads, as the pollers it models are: the thread
// scheduler (on under a seed) then takes its general path at every verbs
// call, not the one-thread fast path. (Parked without a deadline: a timed
// wait would have the scheduler release the benchmark's long stretches
// without a scheduling point, the direct baseline, to let virtual time
// reach it.)
class ParkedThread {
 public:
  // Returns once the thread is parked: until then it is a thread that could
  // run, and under the scheduler the benchmark's stretches without a verbs
  // call (the direct baseline) would keep it from its turn until the
  // watchdog released the main thread.
  ParkedThread()
      : thread_([this] {
          std::unique_lock lock(mutex_);
          parked_ = true;
          wake_.notify_one();
          wake_.wait(lock, [this] { return done_; });
        }) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return parked_; });
  }
  ~ParkedThread() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool parked_ = false;
  bool done_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace

// With a seed the interposed device draws the choices the verbs leave it
// (how many completions a poll returns, which racing completion comes
// first: docs/device.md, "Freedoms drawn from the seed") unless
// VERBFAULT_FREEDOMS is canonical. The baseline device draws the same ones
// from the same seed, so that both devices do the same work and the ratio
// is the harness's cost alone (a drawn partial poll means more polls per
// round trip on both sides, not only on the interposed one).
void draw_baseline_freedoms() {
  const char* seed = std::getenv("VERBFAULT_SEED");
  const char* freedoms = std::getenv("VERBFAULT_FREEDOMS");
  if (seed == nullptr || (freedoms != nullptr && std::strcmp(freedoms, "canonical") == 0)) return;
  verbfault::sim::set_freedom_seed(std::strtoull(seed, nullptr, 0));
}

// The benchmark's own clock. Under the thread scheduler (on whenever the
// harness runs under a seed) the program's clock_gettime reads virtual
// time (docs/threads-and-time.md), and Google Benchmark reads its
// timer through clock_gettime too: defined here, in the executable, this
// one is found before libverbfault.so's and reads the C library's real
// clock. The calls under measurement never read a clock.
extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t clock,
                                                                    timespec* now) {
  using Function = int (*)(clockid_t, timespec*);
  static const Function real = [] {
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void* found = libc != nullptr ? dlvsym(libc, "clock_gettime", "GLIBC_2.17") : nullptr;
    if (found == nullptr) std::abort();
    return reinterpret_cast<Function>(found);
  }();
  return real(clock, now);
}

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  draw_baseline_freedoms();
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  {
    ParkedThread other_thread;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    for (std::unique_ptr<World>& w : g_worlds) w.reset();
  }
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}

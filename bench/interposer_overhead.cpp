// The interposer's cost on the two hottest verbs, ibv_poll_cq and
// ibv_post_send, with no plan: the same simulated provider called directly
// (its ops as the provider installed them) and through libverbfault.so
// (the trampolines in context->ops). Machines are noisy, so the result is
// the ratio of the two, measured in the same run, printed at the end.
#include "verbfault/sim/provider.h"

#include <benchmark/benchmark.h>
#include <infiniband/verbs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

namespace {

// The verbs entry points of one way of reaching the provider.
struct Calls {
  ibv_context* (*open)(ibv_device*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  ibv_device* device;
};

ibv_mr* direct_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return verbfault::sim::reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                                static_cast<unsigned>(access));
}
ibv_mr* interposed_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr(pd, addr, length, access);
}

Calls direct() {
  return {verbfault::sim::open_device, verbfault::sim::alloc_pd,  direct_reg_mr,
          verbfault::sim::create_cq,   verbfault::sim::create_qp, verbfault::sim::modify_qp,
          verbfault::sim::devices()[0]};
}

Calls interposed() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_device* device = nullptr;
  for (int i = 0; i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), "vfsim0") == 0) device = list[i];
  if (device == nullptr) throw std::runtime_error("vfsim0 not listed by libverbfault.so");
  return {ibv_open_device, ibv_alloc_pd, interposed_reg_mr, ibv_create_cq, ibv_create_qp,
          ibv_modify_qp,   device};
}

// An RC QP connected to itself (loopback) with a CQ and a buffer.
struct Loopback {
  ibv_context* ctx;
  ibv_cq* cq;
  ibv_qp* qp;
  ibv_mr* mr;
  alignas(64) char buffer[64];

  explicit Loopback(const Calls& calls) {
    ctx = calls.open(calls.device);
    ibv_pd* pd = calls.alloc_pd(ctx);
    mr = calls.reg_mr(pd, buffer, sizeof buffer, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    cq = calls.create_cq(ctx, 256, nullptr, nullptr, 0);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 64;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    qp = calls.create_qp(pd, &init);
    ibv_port_attr port{};
    verbfault::sim::query_port(ctx, 1, &port);  // same LID either way: vfsim0
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    calls.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = qp->qp_num;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.dlid = 1;  // vfsim0's LID
    a.ah_attr.port_num = 1;
    calls.modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (calls.modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
      throw std::runtime_error("loopback QP did not reach RTS");
  }

  void write_and_reap(benchmark::State& state) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), 8, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buffer) + 32;
    wr.wr.rdma.rkey = mr->rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qp, &wr, &bad) != 0) state.SkipWithError("ibv_post_send failed");
    ibv_wc wc;
    while (ibv_poll_cq(cq, 1, &wc) == 0) {
    }
    if (wc.status != IBV_WC_SUCCESS) state.SkipWithError("write failed");
  }
};

Loopback& loopback(bool through_interposer) {
  static Loopback direct_pair(direct());
  static Loopback interposed_pair(interposed());
  return through_interposer ? interposed_pair : direct_pair;
}

void BM_PollCqEmpty(benchmark::State& state) {
  Loopback& pair = loopback(state.range(0) != 0);
  ibv_wc wc;
  for (auto _ : state) benchmark::DoNotOptimize(ibv_poll_cq(pair.cq, 1, &wc));
}
BENCHMARK(BM_PollCqEmpty)->ArgName("interposed")->Arg(0)->Arg(1);

void BM_PostSendAndPoll(benchmark::State& state) {
  Loopback& pair = loopback(state.range(0) != 0);
  for (auto _ : state) pair.write_and_reap(state);
}
BENCHMARK(BM_PostSendAndPoll)->ArgName("interposed")->Arg(0)->Arg(1);

// Collects the time per iteration of each benchmark, by name: the median
// of the repetitions when there are several, else the single run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      if (run.run_type == Run::RT_Iteration && !times_.contains(run.run_name.str()))
        times_[run.run_name.str()] = run.GetAdjustedRealTime();
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median")
        times_[run.run_name.str()] = run.GetAdjustedRealTime();
    }
  }
  void PrintRatios() const {
    for (const char* name : {"BM_PollCqEmpty", "BM_PostSendAndPoll"}) {
      auto direct = times_.find(std::string(name) + "/interposed:0");
      auto wrapped = times_.find(std::string(name) + "/interposed:1");
      if (direct == times_.end() || wrapped == times_.end() || direct->second <= 0) continue;
      // With VERBFAULT_SEED / _FAULTS / _PLAN in the environment the harness
      // is active (hooks, trace, checks); without, the calls pass through.
      const bool active = std::getenv("VERBFAULT_SEED") || std::getenv("VERBFAULT_FAULTS") ||
                          std::getenv("VERBFAULT_PLAN");
      std::printf("ratio %s interposed/direct (%s): %.2f\n", name,
                  active ? "harness active" : "no plan", wrapped->second / direct->second);
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}

// Connection setup through the simulated connection manager, as librdmacm
// users pay it: from rdma_resolve_addr to ESTABLISHED on both sides (route
// resolution, the QPs made by rdma_create_qp, CONNECT_REQUEST, accept, the
// REP and RTU), one process driving both ends on two event channels.
// Against a baseline measured in the same run, 64 bytes through a pipe to
// a thread and back:
//   ratio BM_ConnectToEstablished/BM_PipeRoundTrip64 latency: X
// Teardown (disconnect, destroy) is outside the timed part.
#include "bench_support.h"
#include "fabric_files.h"

#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

constexpr uint16_t kPort = 7611;

void BM_PipeRoundTrip64(benchmark::State& state) {
  int there[2], back[2];
  if (pipe(there) != 0 || pipe(back) != 0) {
    state.SkipWithError("pipe");
    return;
  }
  std::thread echo([&] {
    std::array<char, 64> buffer{};
    while (read(there[0], buffer.data(), buffer.size()) == 64)
      if (write(back[1], buffer.data(), buffer.size()) != 64) break;
  });
  std::array<char, 64> buffer{};
  for (auto _ : state) {
    if (write(there[1], buffer.data(), buffer.size()) != 64 ||
        read(back[0], buffer.data(), buffer.size()) != 64) {
      state.SkipWithError("the pipe round trip failed");
      break;
    }
  }
  close(there[1]);
  echo.join();
  for (int fd : {there[0], back[0], back[1]}) close(fd);
}
BENCHMARK(BM_PipeRoundTrip64)->UseRealTime();

// The next event's type on `channel`, acknowledged; `id` the event's id.
rdma_cm_event_type next(rdma_event_channel* channel, rdma_cm_id** id = nullptr) {
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(channel, &event) != 0) return RDMA_CM_EVENT_DEVICE_REMOVAL;
  const rdma_cm_event_type type = event->event;
  if (id != nullptr) *id = event->id;
  rdma_ack_cm_event(event);
  return type;
}

ibv_qp_init_attr qp_attributes() {
  ibv_qp_init_attr attr{};
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  return attr;
}

void BM_ConnectToEstablished(benchmark::State& state) {
  rdma_event_channel* server_channel = rdma_create_event_channel();
  rdma_event_channel* client_channel = rdma_create_event_channel();
  rdma_cm_id* listener = nullptr;
  if (server_channel == nullptr || client_channel == nullptr ||
      rdma_create_id(server_channel, &listener, nullptr, RDMA_PS_TCP) != 0) {
    state.SkipWithError("no connection manager (is libverbfault.so first?)");
    return;
  }
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(kPort);
  sockaddr_in to = any;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&any)) != 0 ||
      rdma_listen(listener, 16) != 0) {
    state.SkipWithError("rdma_listen failed");
    return;
  }
  auto fail = [&](const char* what) { state.SkipWithError(what); };
  for (auto _ : state) {
    rdma_cm_id* client = nullptr;
    rdma_cm_id* accepted = nullptr;
    ibv_qp_init_attr attr = qp_attributes();
    if (rdma_create_id(client_channel, &client, nullptr, RDMA_PS_TCP) != 0) return fail("create");
    if (rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&to), 2000) != 0 ||
        next(client_channel) != RDMA_CM_EVENT_ADDR_RESOLVED)
      return fail("resolve_addr");
    if (rdma_resolve_route(client, 2000) != 0 ||
        next(client_channel) != RDMA_CM_EVENT_ROUTE_RESOLVED)
      return fail("resolve_route");
    if (rdma_create_qp(client, nullptr, &attr) != 0) return fail("client QP");
    rdma_conn_param param{};
    param.retry_count = param.rnr_retry_count = 7;
    if (rdma_connect(client, &param) != 0) return fail("connect");
    if (next(server_channel, &accepted) != RDMA_CM_EVENT_CONNECT_REQUEST)
      return fail("no CONNECT_REQUEST");
    attr = qp_attributes();
    if (rdma_create_qp(accepted, nullptr, &attr) != 0) return fail("server QP");
    if (rdma_accept(accepted, &param) != 0) return fail("accept");
    if (next(client_channel) != RDMA_CM_EVENT_ESTABLISHED) return fail("client not ESTABLISHED");
    if (next(server_channel) != RDMA_CM_EVENT_ESTABLISHED) return fail("server not ESTABLISHED");

    state.PauseTiming();
    rdma_disconnect(client);
    next(server_channel);  // DISCONNECTED (the DREQ)
    rdma_disconnect(accepted);
    next(client_channel);  // DISCONNECTED (the DREP)
    rdma_destroy_qp(accepted);
    rdma_destroy_qp(client);
    rdma_destroy_id(accepted);
    rdma_destroy_id(client);
    state.ResumeTiming();
  }
  rdma_destroy_id(listener);
  rdma_destroy_event_channel(client_channel);
  rdma_destroy_event_channel(server_channel);
}
BENCHMARK(BM_ConnectToEstablished)->UseRealTime();

class RatioReporter : public verbfault::bench::RunCollector {
 public:
  void PrintRatios() const {
    const double connect = real_time("BM_ConnectToEstablished");
    const double pipe = real_time("BM_PipeRoundTrip64");
    if (connect > 0 && pipe > 0)
      std::printf("ratio BM_ConnectToEstablished/BM_PipeRoundTrip64 latency: %.2f\n",
                  connect / pipe);
  }
};

}  // namespace

int main(int argc, char** argv) {
  // A fabric of this run's own, this process member 0: the loopback
  // address reaches this process's listener.
  const std::string fabric = "bench-cm-" + std::to_string(getpid());
  setenv("VERBFAULT_FABRIC", fabric.c_str(), 1);
  setenv("VERBFAULT_PROC", "0", 1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  verbfault::sim::wire::remove_status_table(fabric);
  return 0;
}

// F02 (spdk/spdk issue 3212): the NVMe-oF target's poller asserted on
// wc.opcode of a flushed completion (`wc.opcode == IBV_WC_RDMA_READ`
// failed) when a host disconnected during I/O.
//
//   field_failure_F02 buggy|fixed
//
// A target's poller, one thread: each request is a data transfer (an RDMA
// WRITE) followed by its response (a SEND), and each work request's wr_id
// names the target's own record of what it posted. The poller takes the
// kind from that record, as SPDK does, but then asserts that the
// completion's opcode agrees before it looks at the status. Only wr_id,
// status, qp_num and vendor_err of an error completion are defined
// (ibv_poll_cq(3)); the plan disconnects the host while requests are in
// flight (flush qp#0 nth=3), the flushed completions carry whatever opcode
// the device left (0xa5a5a5a5 on the simulated device) and the assertion
// aborts the target (SIGABRT). SPDK's CI builds with assertions on; this
// program checks the same way whatever NDEBUG says. The fixed poller looks
// at the status first and fails the request without reading the opcode.
#include "loopback_pair.h"

#include <cstdlib>

namespace {

using field_failures::fail;
using field_failures::Pair;

constexpr int kRequests = 4;

// What the target posted, by wr_id.
enum class Kind { kData, kResponse, kCommand };
struct Posted {
  Kind kind;
  ibv_wc_opcode expected;  // the opcode of its successful completion
};

// SPDK's assert(), on in this program whatever NDEBUG says.
void check(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "field_failure_F02: assertion `%s' failed\n", what);
  std::abort();
}

void f02(bool fixed) {
  Pair p;
  Posted posted[1 + 3 * kRequests] = {};
  uint64_t next = 1;
  auto record = [&](Kind kind, ibv_wc_opcode expected) {
    posted[next] = {kind, expected};
    return next++;
  };
  // The host's side: a receive for each response.
  for (int r = 0; r < kRequests; ++r)
    if (p.receive(p.b, record(Kind::kCommand, IBV_WC_RECV), r)) fail("ibv_post_recv", errno);
  // The target's side: data, then response, for each request.
  int target_wrs = 0;
  for (int r = 0; r < kRequests; ++r) {
    if (p.write(record(Kind::kData, IBV_WC_RDMA_WRITE)) == 0) ++target_wrs;
    if (p.send(p.a, record(Kind::kResponse, IBV_WC_SEND)) == 0) ++target_wrs;
  }
  int failed = 0;
  for (int completed = 0; completed < target_wrs;) {
    ibv_wc wc[16];
    const int n = p.poll(16, wc);
    for (int i = 0; i < n; ++i) {
      const Posted& what = posted[wc[i].wr_id];
      if (fixed && wc[i].status != IBV_WC_SUCCESS) {
        // Only wr_id, status, qp_num and vendor_err are defined.
        ++failed;
        if (what.kind != Kind::kCommand) ++completed;
        continue;
      }
      switch (what.kind) {
        case Kind::kData:
          check(wc[i].opcode == IBV_WC_RDMA_WRITE, "wc.opcode == IBV_WC_RDMA_WRITE");
          break;
        case Kind::kResponse:
          check(wc[i].opcode == IBV_WC_SEND, "wc.opcode == IBV_WC_SEND");
          break;
        case Kind::kCommand:
          check(wc[i].opcode == IBV_WC_RECV, "wc.opcode == IBV_WC_RECV");
          break;
      }
      if (wc[i].status != IBV_WC_SUCCESS) ++failed;
      if (what.kind != Kind::kCommand) ++completed;
    }
  }
  p.teardown();
  std::printf("field_failure_F02: %d completions failed (host gone)\n", failed);
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f02);
}

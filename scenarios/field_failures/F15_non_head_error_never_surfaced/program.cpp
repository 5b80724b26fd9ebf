// F15 (aws/aws-ofi-nccl PR 347, issue 346): completion errors reached NCCL
// only when it tested the failed request itself, but NCCL tests its
// requests in order: an error on a request behind one that never
// completes was never surfaced, and the job hung.
//
//   field_failure_F15 buggy|fixed
//
// One thread, as NCCL's proxy: a ring step posts a receive (from the
// previous rank) and a send (to the next rank), then tests the requests in
// order, each until it is done, and test() progresses the CQ. In this
// loopback the step's receive waits for the step's own send. The plan
// breaks the connection at the send (flush qp#0 nth=1): the send fails,
// its message never arrives, and the receive, the head request, never
// completes. The buggy test() records the error on the send's request and
// reports only the tested request's state: the proxy spins on the head
// forever (liveness.spinning: 2^20 empty polls while nothing can arrive).
// The fixed test() (PR 347) reports any completion error of the
// communicator at once, and the step fails cleanly.
#include "loopback_pair.h"

namespace {

using field_failures::Pair;

enum class State { kPending, kDone, kError };

struct Request {
  uint64_t wr_id;
  State state = State::kPending;
};

struct Communicator {
  Pair& pair;
  Request requests[2];
  bool fixed;
  bool failed = false;  // a completion error of any request

  // Polls the CQ and updates the requests its completions name.
  void progress() {
    ibv_wc wc[8];
    const int n = pair.poll(8, wc);
    for (int i = 0; i < n; ++i)
      for (Request& r : requests)
        if (r.wr_id == wc[i].wr_id) {
          r.state = wc[i].status == IBV_WC_SUCCESS ? State::kDone : State::kError;
          failed = failed || r.state == State::kError;
        }
  }

  // NCCL's test(): done, pending, or an error.
  State test(const Request& r) {
    progress();
    if (fixed && failed) return State::kError;  // PR 347: always propagate
    return r.state;
  }
};

void f15(bool fixed) {
  Pair p;
  Communicator comm{p, {{1}, {2}}, fixed};
  if (p.receive(p.b, comm.requests[0].wr_id)) field_failures::fail("ibv_post_recv", errno);
  if (p.send(p.a, comm.requests[1].wr_id)) field_failures::fail("ibv_post_send", errno);
  bool ok = true;
  for (const Request& r : comm.requests) {  // in order, each until done
    State s;
    while ((s = comm.test(r)) == State::kPending) {
    }
    if (s == State::kError) {
      ok = false;
      break;
    }
  }
  p.teardown();
  std::printf("field_failure_F15: ring step %s\n", ok ? "done" : "failed: aborting the job");
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f15);
}

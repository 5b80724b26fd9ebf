// A fault-injection session around the code under test, for a user's own
// GoogleTest (or any) test linked against verbfault::verbfault:
//
//   verbfault::Session session(verbfault::parse_rules("flush qp#0 nth=3"), /*seed=*/42);
//   run_my_rdma_code();            // on a simulated or real device
//   EXPECT_EQ(session.fired()[0], 1u);
//
// While a session is open, the plan and seed replace those of the
// environment (VERBFAULT_PLAN / VERBFAULT_FAULTS / VERBFAULT_SEED) and the
// trace is also kept in memory. Objects are named from 0 in each session
// (the first QP created in it is qp#0). One session at a time per process.
#pragma once

#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace verbfault {

// A mistake a runtime check caught (docs/checks.md).
struct Finding {
  std::string check;                 // stable id, e.g. "ack.cq_events_unacked_at_destroy"
  std::string object;                // the object it is about, e.g. "cq#0"
  std::string message;               // one line
  std::uint64_t trace_position = 0;  // trace records written before it
  std::string replay;                // the line that replays the run
};

// What the simulated device does where the verbs leave it a choice (how
// many completions a poll returns, the order of completions of different
// work queues entering a CQ together, an extra event when arming a CQ that
// holds completions): drawn from the seed, to explore what a correct
// application must survive, or the canonical choice, for tests that count
// polls and events exactly.
enum class Freedoms { drawn, canonical };

class Session {
 public:
  Session(Plan plan, std::uint64_t seed, Freedoms freedoms = Freedoms::drawn);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::uint64_t seed() const { return seed_; }
  const Plan& plan() const { return plan_; }
  // The JSON Lines trace records written since the session began.
  std::vector<std::string> trace() const;
  // The trace hash of those records, as the library prints it at the end
  // of a run (docs/trace-format.md: a two-lane hash over each
  // record's words, not over the JSON text).
  std::uint64_t trace_hash() const;
  // How often each rule of the plan fired.
  std::vector<std::uint64_t> fired() const;
  // What the runtime checks caught since the session began.
  std::vector<Finding> findings() const;
  // What the code under test reports of a work request it posted on `qp`
  // (e.g. the status its own API returned for it): reporting a success for
  // a WR whose completion was an error or a flush is a finding
  // (error.failure_reported_as_success). The latest 4096 completions of
  // each QP are remembered.
  void report_outcome(const ibv_qp* qp, std::uint64_t wr_id, bool success);
  // The environment that replays this session under `verbfault run` or a
  // test runner: "VERBFAULT_SEED=42 VERBFAULT_FAULTS='flush qp#0 nth=3'".
  std::string reproduce() const;

 private:
  Plan plan_;
  std::uint64_t seed_;
  Freedoms freedoms_;
};

}  // namespace verbfault

#include "sample_report.h"

#include <optional>
#include <string>
#include <string_view>

namespace verbfault::reports::testing {

namespace {

constexpr std::string_view kCommand = "build/scenarios/sample_rc/sample_rc --iters 8";

// A run of the sample: the objects it creates, a few SEND/RECV round
// trips, and, when `fault_at` is set, a fault at that record and what it
// does after: error completions, an async event, and (`finding`) a check's
// report.
std::vector<TimelineMark> run_timeline(std::optional<std::size_t> fault_at, bool finding) {
  std::vector<TimelineMark> marks;
  std::size_t record = 0;
  const auto mark = [&](std::string object, MarkKind kind, std::string label) {
    marks.push_back({record++, std::move(object), kind, std::move(label)});
  };
  mark("context#0", MarkKind::call, "open_device");
  mark("pd#0", MarkKind::call, "alloc_pd");
  mark("mr#0", MarkKind::call, "reg_mr");
  mark("cq#0", MarkKind::call, "create_cq");
  mark("qp#1", MarkKind::call, "create_qp");
  mark("qp#0", MarkKind::call, "create_qp");
  mark("qp#10", MarkKind::call, "create_qp");
  for (int round = 0; round < 6; ++round) {
    if (fault_at && record >= *fault_at) {
      mark("qp#1", MarkKind::fault, "flush (cause)");
      mark("cq#0", MarkKind::error_completion, "wr_flush_err wr_id=7");
      mark("context#0", MarkKind::event, "qp_fatal on qp#1");
      mark("cq#0", MarkKind::error_completion, "wr_flush_err wr_id=8");
      if (finding)
        mark("qp#1", MarkKind::finding,
             "error_propagation: flushed WR reported as success <wr_id=7>");
      break;
    }
    mark("qp#1", MarkKind::call, "post_send wr_id=" + std::to_string(round));
    mark("qp#0", MarkKind::call, "post_recv");
    mark("cq#0", MarkKind::event, "get_cq_event");
    mark("cq#0", MarkKind::completion, "send success");
    mark("cq#0", MarkKind::completion, "recv success");
  }
  mark("qp#0", MarkKind::call, "destroy_qp");
  return marks;
}

std::vector<TraceLine> excerpt_around(std::size_t record, const std::string& extra) {
  std::vector<TraceLine> lines;
  for (std::size_t i = record - 2; i <= record + 2; ++i)
    lines.push_back(
        {i, "{\"obj\":\"qp#1\",\"seq\":" + std::to_string(i) + ",\"call\":\"ibv_post_send\"}"});
  lines.push_back({record + 9, extra});
  return lines;
}

Entry entry(std::string fault_class, std::vector<std::string> plan, Expectation expect,
            std::uint64_t seed) {
  Entry e;
  e.fault_class = std::move(fault_class);
  e.plan = std::move(plan);
  e.expect = expect;
  e.seed = seed;
  e.replay = "verbfault run --seed " + std::to_string(seed);
  for (const std::string& rule : e.plan) e.replay += " --fault '" + rule + "'";
  e.replay += " -- " + std::string(kCommand);
  e.duration_seconds = 0.25 + 0.01 * static_cast<double>(seed);
  e.trace_hash = "f00dfeed" + std::to_string(seed);
  e.timeline = run_timeline(e.plan.empty() ? std::nullopt : std::optional<std::size_t>(12), false);
  e.trace_records = e.timeline.size();
  e.said = "sample_rc: 8 iterations, 0 errors";
  e.reason = e.plan.empty() ? "exit 0, no finding, as expected" : "recovered: exit 0, no finding";
  return e;
}

FiredFault fired(std::string kind, std::size_t record) {
  return {std::move(kind), 0, "qp#1", 3, "cause", record};
}

}  // namespace

Report sample_report() {
  Report report;
  report.application = "sample_rc";
  report.command = {"build/scenarios/sample_rc/sample_rc", "--iters", "8", "--tag=<a&b>"};
  report.provider = "vfsim0 (simulated)";
  report.battery = "default";
  report.seeds = {1, 2, 3};
  report.verbfault_version = "0.1.0";
  report.started_at = "2024-05-01T12:00:00Z";
  report.duration_seconds = 9.87;
  report.race_windows = {"completion_between_poll_and_arm", "event_for_several_completions",
                         "event_with_empty_cq", "channel_wait_during_teardown"};
  report.classes = {"baseline", "flush", "cq_overflow", "rnr_retry_exhausted", "port_down"};
  report.build = "0.1.0+0123456789abcdef";

  // Two baseline runs reached the stranded window, one flush run an event
  // with an empty CQ; no run reached the other two.
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    report.entries.push_back(entry("baseline", {}, Expectation::success, seed));
    if (seed != 2) report.entries.back().windows = {"completion_between_poll_and_arm"};
  }

  const std::string flush_rule = "flush qp#1 nth=3";
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Entry e = entry("flush", {flush_rule}, Expectation::clean_failure, seed);
    e.faults = {fired("flush", 12)};
    e.excerpt =
        excerpt_around(12, "{\"obj\":\"qp#1\",\"fault\":\"flush\",\"note\":\"</script><b>\"}");
    e.replay_file = "replays/flush-" + std::to_string(seed) + ".replay";
    if (seed == 1) {
      e.windows = {"completion_between_poll_and_arm", "event_with_empty_cq"};
      e.outcome = Outcome::clean_failure;
      e.exit_status = 1;
      e.reason = "reported the error and exited 1";
      e.said = "sample_rc: send failed: WR_FLUSH_ERR";
    } else if (seed == 2) {
      e.outcome = Outcome::crash;
      e.verdict = Verdict::does_not_conform;
      e.exit_status = 139;
      e.reason = "killed by signal 11 (SIGSEGV) after the flush: expected a clean failure";
      e.said = "sample_rc: polling cq 'main' & retrying \"wr 7\"";
    } else {
      e.outcome = Outcome::finding;
      e.verdict = Verdict::does_not_conform;
      e.exit_status = 121;
      e.checks = {"error_propagation.flushed_as_success"};
      e.reason = "a check reported: a flushed WR was reported as success (<wr_id=7> & more)";
      e.said = "error: wr 7 \"flushed\" <status=5> & exiting </script><script>alert(1)</script>";
      e.timeline = run_timeline(12, true);
      e.trace_records = e.timeline.size();
    }
    report.entries.push_back(std::move(e));
  }

  const std::string overflow_rule = "cq_overflow cq#0 nth=2";
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Entry e = entry("cq_overflow", {overflow_rule}, Expectation::recovery, seed);
    if (seed == 2) {
      e.verdict = Verdict::not_exercised;
      e.reason = "the fault never fired: the run tested nothing";
      e.timeline = run_timeline(std::nullopt, false);
      e.trace_records = e.timeline.size();
    } else if (seed == 3) {
      e.outcome = Outcome::hang;
      e.verdict = Verdict::does_not_conform;
      e.exit_status = 122;
      e.faults = {fired("cq_overflow", 12)};
      e.faults[0].object = "cq#0";
      e.reason = "the harness ended a run that could never progress: expected recovery";
      e.said = "";
      e.trace_hash.reset();
    } else {
      e.faults = {fired("cq_overflow", 12)};
      e.faults[0].object = "cq#0";
    }
    report.entries.push_back(std::move(e));
  }

  const std::string rnr_rule = "rnr_retry_exhausted qp#0 opcode=send nth=3";
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Entry e = entry("rnr_retry_exhausted", {rnr_rule}, Expectation::clean_failure, seed);
    e.faults = {fired("rnr_retry_exhausted", 12)};
    e.faults[0].level = seed == 3 ? "effect" : "cause";
    e.outcome = seed == 2 ? Outcome::success : Outcome::clean_failure;
    e.exit_status = seed == 2 ? 0 : 1;
    e.reason = seed == 2 ? "recovered: exit 0, no finding" : "reported the error and exited 1";
    report.entries.push_back(std::move(e));
  }
  return report;
}

}  // namespace verbfault::reports::testing

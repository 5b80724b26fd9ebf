// What a report keeps of a run's trace (trace_digest.h), on small traces
// written here: the excerpt around the first fault and the first finding,
// the timeline's marks, the devices, and the cap on the marks.
#include "report_json.h"
#include "trace_digest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace verbfault::reports {
namespace {

namespace fs = std::filesystem;

// A trace file in the test's temporary directory, removed afterwards.
class TraceFile {
 public:
  explicit TraceFile(const std::vector<std::string>& lines)
      : path_(fs::path(::testing::TempDir()) /
              ("verbfault-digest-" +
               std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
               ".jsonl")) {
    std::ofstream out(path_, std::ios::binary);
    for (const std::string& line : lines) out << line << "\n";
  }
  ~TraceFile() { fs::remove(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string call(const std::string& object, const std::string& name) {
  return R"({"obj":")" + object + R"(","call":")" + name + R"(","ret":0})";
}

// `n` plain calls, then the given records at the given indexes.
std::vector<std::string> trace(std::size_t n,
                               const std::vector<std::pair<std::size_t, std::string>>& at) {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < n; ++i) lines.push_back(call("qp#0", "post_send"));
  for (const auto& [index, line] : at) lines[index] = line;
  return lines;
}

const std::string kFault = R"({"obj":"qp#0","fault":"flush","rule":0,"level":"cause","nth":3})";
std::string check(const std::string& id) {
  return R"({"obj":"cq#0","check":")" + id + R"(","message":"what it saw"})";
}

std::vector<std::size_t> indexes(const std::vector<TraceLine>& excerpt) {
  std::vector<std::size_t> out;
  for (const TraceLine& line : excerpt) out.push_back(line.index);
  return out;
}

std::vector<std::size_t> range(std::size_t from, std::size_t to) {  // [from, to]
  std::vector<std::size_t> out;
  for (std::size_t i = from; i <= to; ++i) out.push_back(i);
  return out;
}

template <typename... Ranges>
std::vector<std::size_t> joined(const Ranges&... ranges) {
  std::vector<std::size_t> out;
  (out.insert(out.end(), ranges.begin(), ranges.end()), ...);
  return out;
}

TEST(TraceDigest, ExcerptIsAWindowAroundTheFirstFaultAndTheFirstFinding) {
  const TraceFile file(trace(40, {{10, kFault},
                                  {12, kFault},  // a second fault: not a centre
                                  {30, check("poll.wait_without_drain")},
                                  {34, check("liveness.blocked_forever")}}));
  const TraceDigest digest = digest_trace(file.path());
  EXPECT_EQ(digest.records, 40u);
  EXPECT_EQ(indexes(digest.excerpt), joined(range(6, 14), range(26, 34)));
  EXPECT_EQ(digest.excerpt[4].json, kFault);  // the line as the trace wrote it
}

TEST(TraceDigest, OverlappingWindowsMerge) {
  const TraceFile file(trace(20, {{5, kFault}, {9, check("poll.wait_without_drain")}}));
  EXPECT_EQ(indexes(digest_trace(file.path()).excerpt), range(1, 13));
}

TEST(TraceDigest, WindowsStopAtTheTraceEnds) {
  const TraceFile file(trace(6, {{1, kFault}, {5, check("poll.wait_without_drain")}}));
  EXPECT_EQ(indexes(digest_trace(file.path()).excerpt), range(0, 5));
}

TEST(TraceDigest, NoFaultNoFindingNoExcerpt) {
  const TraceFile file(trace(30, {}));
  const TraceDigest digest = digest_trace(file.path());
  EXPECT_TRUE(digest.excerpt.empty());
  EXPECT_EQ(digest.timeline.size(), 30u);
}

TEST(TraceDigest, ALeakAtExitIsNotTheFirstFindingWhenAnotherCheckReported) {
  const TraceFile file(trace(40, {{10, check("resource.leak_at_exit")},
                                  {30, check("error_propagation.flushed_as_success")}}));
  EXPECT_EQ(indexes(digest_trace(file.path()).excerpt), range(26, 34));
}

TEST(TraceDigest, ALeakAtExitAloneIsTheFirstFinding) {
  const TraceFile file(trace(40, {{35, check("resource.leak_at_exit")}}));
  EXPECT_EQ(indexes(digest_trace(file.path()).excerpt), range(31, 39));
}

TEST(TraceDigest, TimelineMarksEveryKind) {
  const TraceFile file({
      R"({"obj":"context#0","call":"open_device","device":"vfsim0","provider":"simulated","ret":0})",
      call("qp#1", "post_send"),
      R"({"obj":"cq#0","call":"poll_cq","ret":2,"wc":[{"wr_id":7,"status":"success","opcode":"send","qp":"qp#1"},{"wr_id":8,"status":"wr_flush_err","qp":"qp#1"}]})",
      R"({"obj":"cq#0","call":"poll_cq","ret":0,"wc":[]})",
      R"({"obj":"channel#0","call":"get_cq_event","event":"cq#0","ret":0})",
      R"({"obj":"context#0","call":"get_async_event","event":"qp_fatal","ret":0})",
      R"({"obj":"qp#1","fault":"flush","rule":0,"level":"cause","nth":3})",
      R"({"obj":"qp#1","check":"qp.post_in_error","message":"posted to a QP in error"})",
      R"({"obj":"qp#1","call":"post_send","ret":"ENOMEM","times":3})",
  });
  const TraceDigest digest = digest_trace(file.path());
  struct Want {
    std::size_t record;
    std::string object;
    MarkKind kind;
    std::string label;
  };
  const std::vector<Want> want = {
      {0, "context#0", MarkKind::call, "open_device"},
      {1, "qp#1", MarkKind::call, "post_send"},
      {2, "cq#0", MarkKind::completion, "wr_id 7 success send (qp#1)"},
      {2, "cq#0", MarkKind::error_completion, "wr_id 8 wr_flush_err (qp#1)"},
      {3, "cq#0", MarkKind::call, "poll_cq"},  // an empty poll is a call
      {4, "channel#0", MarkKind::event, "get_cq_event cq#0"},
      {5, "context#0", MarkKind::event, "get_async_event qp_fatal"},
      {6, "qp#1", MarkKind::fault, "flush, cause level, opportunity 3"},
      {7, "qp#1", MarkKind::finding, "qp.post_in_error: posted to a QP in error"},
      {8, "qp#1", MarkKind::call, "post_send -> ENOMEM x3"},
  };
  ASSERT_EQ(digest.timeline.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const TimelineMark& mark = digest.timeline[i];
    EXPECT_EQ(mark.record, want[i].record) << i;
    EXPECT_EQ(mark.object, want[i].object) << i;
    EXPECT_EQ(to_string(mark.kind), to_string(want[i].kind)) << i;
    EXPECT_EQ(mark.label, want[i].label) << i;
  }
}

TEST(TraceDigest, DevicesOpenedInOrderWithoutRepeats) {
  const std::string vfsim0 =
      R"({"obj":"context#0","call":"open_device","device":"vfsim0","provider":"simulated"})";
  const TraceFile file(
      {vfsim0, vfsim0,
       R"({"obj":"context#1","call":"open_device","device":"rxe0","provider":"rxe"})", vfsim0});
  EXPECT_EQ(digest_trace(file.path()).devices,
            (std::vector<std::string>{"vfsim0 (simulated)", "rxe0 (rxe)"}));
}

TEST(TraceDigest, LinesThatAreNotRecordsAreCountedAndSkipped) {
  // A run killed mid-write leaves its last line cut short.
  std::vector<std::string> lines = trace(12, {{8, kFault}});
  lines[5] = "not json";
  lines[6] = "42";
  lines.push_back(R"({"obj":"qp#0","call":"post_se)");
  const TraceFile file(lines);
  const TraceDigest digest = digest_trace(file.path());
  EXPECT_EQ(digest.records, 13u);
  EXPECT_EQ(digest.timeline.size(), 10u);
  for (const TimelineMark& mark : digest.timeline) {
    EXPECT_NE(mark.record, 5u);
    EXPECT_NE(mark.record, 6u);
    EXPECT_NE(mark.record, 12u);
  }
  // The excerpt holds records only: the report's JSON embeds each as an
  // object (reports/schema: an excerpt's record is an object).
  EXPECT_EQ(indexes(digest.excerpt), joined(range(4, 4), range(7, 11)));
  Report report;
  report.entries.emplace_back().excerpt = digest.excerpt;
  const std::string json = report_json(report);
  ASSERT_TRUE(nlohmann::json::accept(json)) << json;
  // Parsed into a named value: a range-for over a member of the temporary
  // would iterate freed memory (the temporary dies before the loop; ASan).
  const nlohmann::json parsed = nlohmann::json::parse(json);
  for (const nlohmann::json& line : parsed["entries"][0]["excerpt"])
    EXPECT_TRUE(line["record"].is_object()) << line.dump();
}

TEST(TraceDigest, AMissingTraceIsAnEmptyDigest) {
  const TraceDigest digest = digest_trace("/nonexistent-verbfault-dir/trace.jsonl");
  EXPECT_EQ(digest.records, 0u);
  EXPECT_TRUE(digest.excerpt.empty());
  EXPECT_TRUE(digest.timeline.empty());
  EXPECT_TRUE(digest.devices.empty());
}

TEST(TraceDigest, TimelineCapKeepsTheWindowAroundTheFirstFault) {
  const std::size_t n = 3 * kTimelineMarks / 2;  // 3000 records, a mark each
  const std::size_t fault = n / 2;
  const TraceFile file(trace(n, {{fault, kFault}, {n - 10, check("poll.wait_without_drain")}}));
  const TraceDigest digest = digest_trace(file.path());
  EXPECT_EQ(digest.records, n);
  ASSERT_EQ(digest.timeline.size(), kTimelineMarks);
  EXPECT_EQ(digest.timeline.front().record, fault - kTimelineMarks / 2);
  EXPECT_EQ(digest.timeline.back().record, fault + kTimelineMarks / 2 - 1);
  EXPECT_EQ(digest.timeline[kTimelineMarks / 2].kind, MarkKind::fault);
  // The excerpt is not capped: both windows.
  EXPECT_EQ(indexes(digest.excerpt),
            joined(range(fault - kExcerptContext, fault + kExcerptContext),
                   range(n - 10 - kExcerptContext, n - 10 + kExcerptContext)));
}

TEST(TraceDigest, TimelineCapStaysInsideTheTrace) {
  const std::size_t n = 3 * kTimelineMarks / 2;
  for (const std::size_t fault : {std::size_t{3}, n - 3}) {
    const TraceFile file(trace(n, {{fault, kFault}}));
    const TraceDigest digest = digest_trace(file.path());
    ASSERT_EQ(digest.timeline.size(), kTimelineMarks) << fault;
    EXPECT_EQ(digest.timeline.front().record, fault < n / 2 ? 0 : n - kTimelineMarks) << fault;
    EXPECT_EQ(digest.timeline[fault < n / 2 ? fault : fault - (n - kTimelineMarks)].kind,
              MarkKind::fault)
        << fault;
  }
}

TEST(TraceDigest, TimelineCapCentresOnTheFirstFindingWithoutAFault) {
  const std::size_t n = 3 * kTimelineMarks / 2;
  const std::size_t finding = 1200;
  const TraceFile file(trace(n, {{finding, check("liveness.blocked_forever")}}));
  const TraceDigest digest = digest_trace(file.path());
  ASSERT_EQ(digest.timeline.size(), kTimelineMarks);
  EXPECT_EQ(digest.timeline.front().record, finding - kTimelineMarks / 2);
  EXPECT_EQ(digest.timeline[kTimelineMarks / 2].kind, MarkKind::finding);
}

}  // namespace
}  // namespace verbfault::reports

// The JSON, JUnit XML and Markdown reports: the sample report against
// golden files (which reports.json_schema and reports.junit_xsd also hold
// to the schemas in reports/schema/), the JSON read back, and what
// report_from_json says about a document it cannot read.
//
// Regenerate the goldens after an intended change of a writer, then review
// their diff:
//
//     VERBFAULT_UPDATE_GOLDENS=1 build/reports/tests/report_tests --gtest_filter='*Golden*'
#include "golden.h"
#include "junit_writer.h"
#include "markdown_writer.h"
#include "report_json.h"
#include "sample_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <sstream>
#include <string>

namespace verbfault::reports {
namespace {

using Json = nlohmann::ordered_json;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

TEST(ReportJson, MatchesTheGoldenFile) {
  EXPECT_MATCHES_GOLDEN(report_json(testing::sample_report()), "report.json");
}

TEST(JunitReport, MatchesTheGoldenFile) {
  EXPECT_MATCHES_GOLDEN(junit_report(testing::sample_report()), "report.xml");
}

TEST(MarkdownReport, MatchesTheGoldenFile) {
  EXPECT_MATCHES_GOLDEN(markdown_report(testing::sample_report()), "report.md");
}

TEST(ReportJson, ReadsBackWhatItWrote) {
  const Report report = testing::sample_report();
  const std::string json = report_json(report);
  const Report back = report_from_json(json);
  EXPECT_EQ(report_json(back), json);
  // A few fields by value, not only through the writer.
  EXPECT_EQ(back.command, report.command);
  EXPECT_EQ(back.seeds, report.seeds);
  ASSERT_EQ(back.entries.size(), report.entries.size());
  for (std::size_t i = 0; i < report.entries.size(); ++i) {
    const Entry& want = report.entries[i];
    const Entry& got = back.entries[i];
    EXPECT_EQ(got.fault_class, want.fault_class);
    EXPECT_EQ(got.expect, want.expect) << i;
    EXPECT_EQ(got.outcome, want.outcome) << i;
    EXPECT_EQ(got.verdict, want.verdict) << i;
    EXPECT_EQ(got.said, want.said) << i;
    EXPECT_EQ(got.trace_hash, want.trace_hash) << i;
    EXPECT_EQ(got.duration_seconds, want.duration_seconds) << i;
    EXPECT_EQ(got.faults.size(), want.faults.size()) << i;
    ASSERT_EQ(got.timeline.size(), want.timeline.size()) << i;
    for (std::size_t k = 0; k < want.timeline.size(); ++k) {
      EXPECT_EQ(got.timeline[k].kind, want.timeline[k].kind);
      EXPECT_EQ(got.timeline[k].label, want.timeline[k].label);
    }
    ASSERT_EQ(got.excerpt.size(), want.excerpt.size()) << i;
    for (std::size_t k = 0; k < want.excerpt.size(); ++k)
      EXPECT_EQ(Json::parse(got.excerpt[k].json), Json::parse(want.excerpt[k].json));
  }
}

TEST(ReportJson, EmptyReportReadsBack) {
  const std::string json = report_json(Report{});
  EXPECT_EQ(report_json(report_from_json(json)), json);
}

// report_from_json's error for the sample's JSON after `change`.
std::string error_after(const std::function<void(Json&)>& change) {
  Json json = Json::parse(report_json(testing::sample_report()));
  change(json);
  try {
    report_from_json(json.dump(2));
  } catch (const ReportFormatError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no ReportFormatError for " << json.dump().substr(0, 200);
  return {};
}

// The fields a merge reads (report_merge.h): mode, classes, build, shard.
TEST(ReportJson, AShardReadsBackWithWhatAMergeNeeds) {
  Report report = testing::sample_report();
  report.mode = "sweep";
  report.shard = Report::Shard{2, 4};
  const Report back = report_from_json(report_json(report));
  EXPECT_EQ(back.mode, "sweep");
  EXPECT_EQ(back.classes, report.classes);
  EXPECT_EQ(back.build, report.build);
  ASSERT_TRUE(back.shard.has_value());
  EXPECT_EQ(*back.shard, (Report::Shard{2, 4}));
  EXPECT_FALSE(report_from_json(report_json(testing::sample_report())).shard.has_value());
}

TEST(ReportJson, RefusesAShardOutsideItsCountOrAnUnknownMode) {
  EXPECT_NE(error_after([](Json& j) { j["shard"] = {{"index", 5}, {"count", 4}}; })
                .find("report.shard: expected 1 <= index <= count, got 5/4"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& j) { j["mode"] = "fuzz"; }).find("report.mode: expected"),
            std::string::npos);
}

TEST(ReportJson, RefusesAnotherFormat) {
  const std::string error = error_after([](Json& j) { j["format"] = "junit"; });
  EXPECT_NE(error.find("report.format"), std::string::npos) << error;
  EXPECT_NE(error.find("verbfault-conformance-report"), std::string::npos) << error;
}

TEST(ReportJson, RefusesAnotherVersion) {
  const std::string error = error_after([](Json& j) { j["version"] = 2; });
  EXPECT_NE(error.find("report.version"), std::string::npos) << error;
  EXPECT_NE(error.find("expected 1, got 2"), std::string::npos) << error;
}

TEST(ReportJson, NamesAMissingField) {
  std::string error = error_after([](Json& j) { j["entries"][4].erase("seed"); });
  EXPECT_NE(error.find("report.entries[4]"), std::string::npos) << error;
  EXPECT_NE(error.find("'seed'"), std::string::npos) << error;
  error = error_after([](Json& j) { j.erase("provider"); });
  EXPECT_NE(error.find("report: expected a field 'provider'"), std::string::npos) << error;
  error = error_after([](Json& j) { j["entries"][3]["faults"][0].erase("level"); });
  EXPECT_NE(error.find("report.entries[3].faults[0]"), std::string::npos) << error;
  EXPECT_NE(error.find("'level'"), std::string::npos) << error;
  error = error_after([](Json& j) { j["entries"][3]["excerpt"][1].erase("record"); });
  EXPECT_NE(error.find("report.entries[3].excerpt[1]"), std::string::npos) << error;
  EXPECT_NE(error.find("'record'"), std::string::npos) << error;
}

TEST(ReportJson, NamesAFieldOfTheWrongType) {
  std::string error = error_after([](Json& j) { j["entries"][0]["exit_status"] = "0"; });
  EXPECT_NE(error.find("report.entries[0].exit_status: expected a number"), std::string::npos)
      << error;
  error = error_after([](Json& j) { j["application"] = 7; });
  EXPECT_NE(error.find("report.application: expected a string"), std::string::npos) << error;
}

TEST(ReportJson, NamesAnUnknownEnumValue) {
  std::string error = error_after([](Json& j) { j["entries"][4]["outcome"] = "sucess"; });
  EXPECT_NE(error.find("report.entries[4].outcome"), std::string::npos) << error;
  EXPECT_NE(error.find("'sucess'"), std::string::npos) << error;
  error = error_after([](Json& j) { j["entries"][1]["expect"] = "miracle"; });
  EXPECT_NE(error.find("report.entries[1].expect: unknown value 'miracle'"), std::string::npos)
      << error;
  error = error_after([](Json& j) { j["entries"][2]["verdict"] = "maybe"; });
  EXPECT_NE(error.find("report.entries[2].verdict: unknown value 'maybe'"), std::string::npos)
      << error;
  error = error_after([](Json& j) { j["entries"][0]["timeline"][5][2] = "blip"; });
  EXPECT_NE(error.find("report.entries[0].timeline[5]: unknown mark kind \"blip\""),
            std::string::npos)
      << error;
  error = error_after([](Json& j) { j["entries"][0]["timeline"][5] = {5, "qp#1", "call"}; });
  EXPECT_NE(error.find("report.entries[0].timeline[5]: expected [record, object, kind, label]"),
            std::string::npos)
      << error;
}

TEST(ReportJson, RefusesWhatIsNotJson) {
  try {
    report_from_json("{\"format\": ");
    FAIL() << "no error";
  } catch (const ReportFormatError& error) {
    EXPECT_STREQ(error.what(), "report: not a JSON document");
  }
}

TEST(ReportJson, BytesThatAreNotTextBecomeReplacementCharacters) {
  Report report = testing::sample_report();
  report.entries[4].said = "bad \xFF\xFE byte";
  const std::string json = report_json(report);
  EXPECT_EQ(report_from_json(json).entries[4].said, "bad \xEF\xBF\xBD\xEF\xBF\xBD byte");
}

TEST(JunitReport, CountsAndClassesFollowTheVerdicts) {
  const std::string xml = junit_report(testing::sample_report());
  EXPECT_NE(xml.find("<testsuites name=\"verbfault conform: sample_rc\" tests=\"12\" "
                     "failures=\"3\" errors=\"0\" skipped=\"1\" time=\"9.870\">"),
            std::string::npos)
      << xml;
  EXPECT_EQ(count(xml, "<testsuite "), 4u);
  EXPECT_EQ(count(xml, "<testcase "), 12u);
  EXPECT_EQ(count(xml, "<failure "), 3u);
  EXPECT_EQ(count(xml, "<skipped "), 1u);
  EXPECT_EQ(count(xml, "timestamp=\"2024-05-01T12:00:00\""), 4u);
  EXPECT_NE(xml.find("classname=\"sample_rc.cq_overflow\""), std::string::npos);
}

TEST(JunitReport, ControlBytesNeverReachTheXml) {
  Report report = testing::sample_report();
  report.entries[4].said = std::string("esc\x1b[31m nul\0 bell\x07 \xC3", 22);
  report.provider = "dev\x01";
  const std::string xml = junit_report(report);
  for (const char c : xml) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 || c == '\n' || c == '\t' || c == '\r') << int(byte);
  }
  EXPECT_NE(xml.find("esc\xEF\xBF\xBD[31m nul\xEF\xBF\xBD bell\xEF\xBF\xBD \xEF\xBF\xBD"),
            std::string::npos);
}

TEST(MarkdownReport, APipeOrABacktickKeepsItsCell) {
  Report report = testing::sample_report();
  report.entries[4].reason = "a | b";
  report.entries[4].fault_class = "flush";
  report.entries[4].replay = "verbfault run --fault 'x' -- sh -c 'a | b `c`'";
  const std::string md = markdown_report(report);
  // Every row keeps its columns: 6 in the failures' table, 8 in the matrix.
  std::size_t rows = 0;
  bool matrix = false;
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    matrix = matrix || line.find("<details>") != std::string::npos;
    if (line.rfind("| ", 0) != 0) continue;
    ++rows;
    std::size_t separators = 0;  // unescaped pipes
    for (std::size_t i = 0; i < line.size(); ++i)
      separators += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    EXPECT_EQ(separators, matrix ? 9u : 7u) << line;
  }
  EXPECT_GT(rows, 5u);
  EXPECT_NE(md.find("| a \\| b |"), std::string::npos) << md;
  EXPECT_NE(md.find("``verbfault run --fault 'x' -- sh -c 'a \\| b `c`'``"), std::string::npos)
      << md;
}

TEST(MarkdownReport, SaysWhenEveryRunConforms) {
  Report report = testing::sample_report();
  for (Entry& entry : report.entries) entry.verdict = Verdict::conforms;
  const std::string md = markdown_report(report);
  EXPECT_NE(md.find(":white_check_mark: all 12 runs that exercised their fault conform"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| fault class | seed |"), std::string::npos) << md;
}

TEST(MarkdownReport, ListsAtMostFiftyFailures) {
  Report report = testing::sample_report();
  const Entry failing = report.entries[4];
  for (int i = 0; i < 60; ++i) report.entries.push_back(failing);
  const std::string md = markdown_report(report);
  EXPECT_EQ(count(md, " | **"), 50u);
  EXPECT_NE(md.find("… and 13 more: see the HTML or JSON report."), std::string::npos) << md;
}

}  // namespace
}  // namespace verbfault::reports

// The HTML report: the sample report's page against a golden file, and
// the escaping of every text that comes from a run.
//
// Regenerate the golden after an intended change of the page (the writer,
// html/report.css or html/report.js), then review its diff:
//
//     VERBFAULT_UPDATE_GOLDENS=1 build/reports/tests/report_tests --gtest_filter='HtmlReport.*'
#include "html_matrix.h"
#include "html_report_data.h"
#include "html_writer.h"
#include "script_json.h"
#include "golden.h"
#include "sample_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace verbfault::reports {
namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

// The text between `open` and the next `close`.
std::string between(const std::string& text, const std::string& open, const std::string& close) {
  const std::size_t start = text.find(open);
  if (start == std::string::npos) return {};
  const std::size_t end = text.find(close, start + open.size());
  if (end == std::string::npos) return {};
  return text.substr(start + open.size(), end - start - open.size());
}

nlohmann::json page_data(const std::string& html) {
  return nlohmann::json::parse(
      between(html, "<script type=\"application/json\" id=\"report-data\">", "</script>"));
}

TEST(HtmlReport, MatchesTheGoldenFile) {
  EXPECT_MATCHES_GOLDEN(html_report(testing::sample_report()), "report.html");
}

TEST(HtmlReport, IsTheSameBytesForTheSameReport) {
  EXPECT_EQ(html_report(testing::sample_report()), html_report(testing::sample_report()));
}

TEST(HtmlReport, NoTextFromTheRunBecomesMarkup) {
  const std::string html = html_report(testing::sample_report());
  // The data block and the page's script, and no other.
  EXPECT_EQ(count(html, "<script"), 2u);
  EXPECT_EQ(count(html, "</script>"), 2u);
  EXPECT_EQ(count(html, "alert(1)"), 1u);  // inside the JSON, as text
  EXPECT_NE(html.find("\\u003c/script>\\u003cscript>alert(1)\\u003c/script>"), std::string::npos);
  EXPECT_NE(html.find("--tag=&lt;a&amp;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("(&lt;wr_id=7&gt; &amp; more)"), std::string::npos);
  // No request: no URL the browser could follow (the SVG namespace is a name).
  EXPECT_EQ(count(html, "http:"), count(html, "http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
}

TEST(HtmlReport, BytesThatAreNotTextBecomeReplacementCharacters) {
  Report report = testing::sample_report();
  report.application = "bad\xFF<name>";
  report.entries[4].reason = std::string("nul\0here", 8);
  const std::string html = html_report(report);
  EXPECT_NE(html.find("<h1>bad\xEF\xBF\xBD&lt;name&gt;</h1>"), std::string::npos);
  EXPECT_NE(html.find("nul\xEF\xBF\xBDhere"), std::string::npos);
  EXPECT_EQ(html.find('\0'), std::string::npos);
}

TEST(HtmlReport, DataBlockGivesBackEveryTextUnchanged) {
  const Report report = testing::sample_report();
  const nlohmann::json data = page_data(html_report(report));
  ASSERT_EQ(data["entries"].size(), report.entries.size());
  for (std::size_t i = 0; i < report.entries.size(); ++i) {
    const Entry& entry = report.entries[i];
    const nlohmann::json& got = data["entries"][i];
    EXPECT_EQ(got["said"], entry.said);
    EXPECT_EQ(got["reason"], entry.reason);
    EXPECT_EQ(got["replay"], entry.replay);
    EXPECT_EQ(got["seed"], std::to_string(entry.seed));
    EXPECT_EQ(got["timeline"]["marks"].size(), entry.timeline.size());
    ASSERT_EQ(got["excerpt"].size(), entry.excerpt.size());
    for (std::size_t k = 0; k < entry.excerpt.size(); ++k)
      EXPECT_EQ(got["excerpt"][k][1], entry.excerpt[k].json);
  }
}

TEST(HtmlReport, MatrixHasOneSquarePerEntryAndOneTabStopOnTheFirstFailure) {
  const Report report = testing::sample_report();
  const std::string matrix = html_matrix(report);
  EXPECT_EQ(count(matrix, " data-entry=\""), report.entries.size());
  EXPECT_EQ(count(matrix, "tabindex=\"0\""), 1u);
  EXPECT_NE(matrix.find("data-entry=\"4\" data-row=\"1\" tabindex=\"0\""), std::string::npos);
  EXPECT_EQ(fault_classes(report),
            (std::vector<std::string>{"baseline", "flush", "cq_overflow", "rnr_retry_exhausted"}));
}

TEST(HtmlReport, TimelineRowsGoByKindThenCreationIndex) {
  std::vector<TimelineMark> marks;
  for (const char* object :
       {"srq#1", "qp#10", "qp", "mr#0", "qp#2", "cq#0", "context#0", "pd#0", "qp#2", "ah#3"})
    marks.push_back({0, object, MarkKind::call, ""});
  EXPECT_EQ(timeline_rows(marks),
            (std::vector<std::string>{"context#0", "pd#0", "cq#0", "qp#2", "qp#10", "qp", "ah#3",
                                      "mr#0", "srq#1"}));
}

TEST(HtmlReport, EmptyReportIsAPageToo) {
  const std::string html = html_report(Report{});
  EXPECT_NE(html.find("The battery ran no entry."), std::string::npos);
  EXPECT_TRUE(page_data(html)["entries"].empty());
}

TEST(HtmlReport, WriteNamesThePathItCannotWrite) {
  const std::filesystem::path path = "/nonexistent-verbfault-dir/report.html";
  try {
    write_html_report(testing::sample_report(), path);
    FAIL() << "no error for " << path;
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
}

TEST(ScriptJson, HidesEveryAngleBracketOpener) {
  const nlohmann::json value = {{"said", "</script><!-- <SCRIPT>"}, {"bad", "\xFF"}};
  const std::string text = json_for_script(value);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(text)["said"], "</script><!-- <SCRIPT>");
  EXPECT_EQ(nlohmann::json::parse(text)["bad"], "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace verbfault::reports

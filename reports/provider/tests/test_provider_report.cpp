// The provider report's model and writers against golden files
// (golden/report.json, golden/side_by_side.md): what the probe writes and
// what `verbfault provider-report` reads back, shows side by side and
// compares. A deliberate change of a writer's output: regenerate the
// golden files with VERBFAULT_UPDATE_GOLDEN=1 and review the diff.
#include "markdown_table.h"
#include "provider_report_json.h"
#include "report_compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace verbfault::provider_report {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;

std::string golden_path(const std::string& name) {
  return std::string(VERBFAULT_GOLDEN_DIR) + "/" + name;
}

// Compares `text` with the golden file, or rewrites it when asked to.
void expect_golden(const std::string& name, const std::string& text) {
  if (std::getenv("VERBFAULT_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path(name)) << text;
    return;
  }
  std::ifstream in(golden_path(name));
  ASSERT_TRUE(in) << golden_path(name) << " is missing";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str()) << "differs from " << golden_path(name)
                                << " (VERBFAULT_UPDATE_GOLDEN=1 rewrites it)";
}

ProviderReport sample(const std::string& device) {
  ProviderReport report;
  report.generator = "verbfault-provider-probe 0.1.0";
  report.provider = {
      device, "InfiniBand channel adapter", "Ethernet", "0.0.0", 0xffffff, 0, 0, "6.1.0-56-amd64"};
  report.checks = {
      {"flush.outstanding_receives", "3 receive WRs outstanding when the QP is moved to ERR",
       "IBA 10.3.1 (Error state); ibv_poll_cq(3)",
       "3 IBV_WC_WR_FLUSH_ERR completions, in post order",
       "1:WR_FLUSH_ERR, 2:WR_FLUSH_ERR, 3:WR_FLUSH_ERR", nlohmann::json::array({1, 2, 3}),
       Verdict::conforms, ""},
      {"flush.receive_posted_in_err",
       "a receive WR posted to a QP in ERR",
       "IBA 10.3.1",
       "the WR completes IBV_WC_WR_FLUSH_ERR",
       "posted; no completion within 3 s | none",
       {{"post", "0"}, {"completions", nlohmann::json::array()}},
       Verdict::deviates,
       ""},
      {"bad_calls.alloc_mw_type1", "ibv_alloc_mw of a type 1 memory window", "ibv_alloc_mw(3)",
       "a memory window", "fails with EOPNOTSUPP", "EOPNOTSUPP", Verdict::unsupported, ""},
      {"modify_qp.sqe_to_rts", "SQE -> RTS (UD)", "ibv_modify_qp(3); IBA 10.3.1",
       "succeeds, the QP is in RTS", "could not set up", nullptr, Verdict::inconclusive,
       "a UD send error left the QP in ERR,\nnot SQE"},
  };
  return report;
}

TEST(ProviderReportJson, WritesTheGoldenDocument) {
  expect_golden("report.json", to_json_text(sample("rxe0")));
}

TEST(ProviderReportJson, ReadsBackWhatItWrote) {
  const ProviderReport report = sample("rxe0");
  const ProviderReport again = from_json(nlohmann::json::parse(to_json_text(report)));
  EXPECT_EQ(to_json_text(again), to_json_text(report));
  ASSERT_EQ(again.checks.size(), 4u);
  EXPECT_EQ(again.checks[3].verdict, Verdict::inconclusive);
  EXPECT_EQ(again.checks[3].note, "a UD send error left the QP in ERR,\nnot SQE");
  EXPECT_EQ(again.checks[0].area(), "flush");
  EXPECT_EQ(again.count(Verdict::deviates), 1u);
}

TEST(ProviderReportJson, ALineIsOneCheck) {
  const Check check = sample("rxe0").checks[1];
  const std::string line = to_json_line(check);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(to_json(check_from_json(nlohmann::json::parse(line))), to_json(check));
}

TEST(ProviderReportJson, RejectsWhatItCannotRead) {
  nlohmann::json document = to_json(sample("rxe0"));
  document["format"] = "verbfault-conformance-report";
  EXPECT_THROW(from_json(document), ReportFormatError);
  document = to_json(sample("rxe0"));
  document["version"] = 2;
  try {
    from_json(document);
    FAIL() << "version 2 was read";
  } catch (const ReportFormatError& error) {
    EXPECT_THAT(error.what(), HasSubstr("version 2"));
  }
  document = to_json(sample("rxe0"));
  document["checks"][0]["verdict"] = "maybe";
  try {
    from_json(document);
    FAIL() << "an unknown verdict was read";
  } catch (const ReportFormatError& error) {
    EXPECT_THAT(error.what(), HasSubstr("flush.outstanding_receives"));
    EXPECT_THAT(error.what(), HasSubstr("maybe"));
  }
  EXPECT_THROW(read_report_file(golden_path("does-not-exist.json")), ReportFormatError);
}

// Two providers: the second ran one check fewer and differs in two.
std::pair<ProviderReport, ProviderReport> two() {
  ProviderReport rxe = sample("rxe0");
  ProviderReport sim = sample("vfsim0");
  sim.provider.link_layer = "InfiniBand";
  sim.checks[1].verdict = Verdict::conforms;
  sim.checks[1].observed = "posted; 4:WR_FLUSH_ERR";
  sim.checks[1].value = {{"post", "0"}, {"completions", nlohmann::json::array({4})}};
  sim.checks.erase(sim.checks.begin() + 2);
  return {sim, rxe};
}

TEST(ProviderReportMarkdown, PutsProvidersSideBySide) {
  const auto [sim, rxe] = two();
  const std::string text = side_by_side_markdown({sim, rxe}, "Preface | with a pipe.");
  EXPECT_THAT(text, HasSubstr("| vfsim0 | InfiniBand | 6.1.0-56-amd64 | 3 | 0 | 0 | 1 |"));
  EXPECT_THAT(text, HasSubstr("| rxe0 | Ethernet | 6.1.0-56-amd64 | 4 | 1 | 1 | 1 |"));
  EXPECT_THAT(text, HasSubstr("**✗ posted; no completion within 3 s \\| none**"));
  EXPECT_THAT(text, HasSubstr("(not run)"));
  expect_golden("side_by_side.md", text);
}

TEST(ProviderReportCompare, NamesEveryChangedCheck) {
  const auto [sim, rxe] = two();
  EXPECT_TRUE(compare(rxe, rxe).empty());
  const std::vector<Difference> differences = compare(rxe, sim);
  ASSERT_EQ(differences.size(), 2u);
  EXPECT_EQ(differences[0].id, "flush.receive_posted_in_err");
  EXPECT_THAT(differences[0].what, HasSubstr("verdict deviates -> conforms"));
  EXPECT_THAT(differences[0].what, HasSubstr("value {\"completions\":[],\"post\":\"0\"} -> "));
  EXPECT_EQ(differences[1].id, "bad_calls.alloc_mw_type1");
  EXPECT_THAT(differences[1].what, HasSubstr("no longer reported (was unsupported)"));
  EXPECT_THAT(compare(sim, rxe),
              ElementsAre(Field(&Difference::id, "flush.receive_posted_in_err"),
                          Field(&Difference::what, HasSubstr("new check (unsupported"))));
}

TEST(ProviderReportCompare, WordingMayChangeValuesMayNot) {
  const ProviderReport before = sample("rxe0");
  ProviderReport after = before;
  after.checks[0].title = "reworded";
  after.checks[0].observed = "reworded too";
  after.provider.kernel = "6.12";
  EXPECT_TRUE(compare(before, after).empty());
  after.checks[0].value = nlohmann::json::array({1, 3, 2});
  EXPECT_EQ(compare(before, after).size(), 1u);
}

}  // namespace
}  // namespace verbfault::provider_report

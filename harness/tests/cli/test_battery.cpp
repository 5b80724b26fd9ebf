// Conformance batteries (harness/cli/battery.h): the default battery and
// the one beside it parse, and every way a battery file can be wrong is a
// BatteryError of one line naming the file, the entry, the field and what
// was expected.
#include "battery.h"
#include "verbfault/plan.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace verbfault::cli {
namespace {

using reports::Expectation;

TEST(Battery, TheDefaultBatteryParses) {
  const Battery battery = read_battery("default");
  EXPECT_EQ(battery.source, "default");
  EXPECT_EQ(battery.seeds, 3u);
  ASSERT_EQ(battery.entries.size(), 23u);
  EXPECT_EQ(battery.entries.front().name, "baseline");
  EXPECT_TRUE(battery.entries.front().faults.empty());
  EXPECT_EQ(battery.entries.front().expect, Expectation::success);
  std::set<std::string> names;
  for (std::size_t i = 1; i < battery.entries.size(); ++i) {
    const BatteryEntry& entry = battery.entries[i];
    EXPECT_TRUE(names.insert(entry.name).second) << entry.name;
    ASSERT_EQ(entry.faults.size(), 1u) << entry.name;
    EXPECT_NE(entry.expect, Expectation::success) << entry.name;
    // A rule of the plan grammar.
    EXPECT_NO_THROW(validate(parse_rule(entry.faults[0]))) << entry.name << ": " << entry.faults[0];
  }
}

TEST(Battery, TheBuiltInTextIsTheShippedFile) {
  EXPECT_EQ(parse_battery(default_battery_text(), "x").entries.size(),
            read_battery(std::string(VERBFAULT_BATTERIES_DIR) + "/default.yaml").entries.size());
}

TEST(Battery, TheLostEventsBatteryParses) {
  const std::string file = std::string(VERBFAULT_BATTERIES_DIR) + "/lost-events.yaml";
  const Battery battery = read_battery(file);
  EXPECT_EQ(battery.source, file);
  EXPECT_FALSE(battery.entries.empty());
}

TEST(Battery, FaultsAsAListAndSeeds) {
  const Battery battery = parse_battery(R"(format: 1
seeds: 7
entries:
  - name: mix.1_a-b
    faults: [partial_poll p=0.5, coalesce_cq_event p=0.3]
    expect: recovery
)",
                                        "mix.yaml");
  EXPECT_EQ(battery.seeds, 7u);
  ASSERT_EQ(battery.entries.size(), 1u);
  EXPECT_EQ(battery.entries[0].faults,
            (std::vector<std::string>{"partial_poll p=0.5", "coalesce_cq_event p=0.3"}));
  EXPECT_EQ(battery.entries[0].expect, Expectation::recovery);
}

// The BatteryError of `text` as file "bad.yaml".
std::string error_of(const std::string& text) {
  try {
    parse_battery(text, "bad.yaml");
  } catch (const BatteryError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
    return what;
  }
  ADD_FAILURE() << "no BatteryError for:\n" << text;
  return {};
}

constexpr const char* kHead = "format: 1\nentries:\n  - name: baseline\n    expect: success\n";

#define EXPECT_ERROR(text, ...)                                                                   \
  do {                                                                                            \
    const std::string error_ = error_of(text);                                                    \
    for (const char* part_ : {__VA_ARGS__})                                                       \
      EXPECT_NE(error_.find(part_), std::string::npos) << "'" << part_ << "' not in: " << error_; \
  } while (false)

TEST(BatteryError, UnknownTopLevelField) {
  EXPECT_ERROR(std::string(kHead) + "timeout: 5\n", "bad.yaml", "unknown field 'timeout'",
               "expected format, seeds, entries");
}

TEST(BatteryError, AnotherFormat) {
  EXPECT_ERROR("format: 2\nentries:\n  - name: baseline\n    expect: success\n", "bad.yaml",
               "expected format: 1");
  EXPECT_ERROR("entries:\n  - name: baseline\n    expect: success\n", "bad.yaml",
               "expected format: 1");
}

TEST(BatteryError, SeedsOutOfRange) {
  for (const char* seeds : {"0", "10001", "-1", "three"})
    EXPECT_ERROR(std::string(kHead) + "seeds: " + seeds + "\n", "bad.yaml.seeds",
                 "expected an integer 1..10000");
}

TEST(BatteryError, NoEntries) {
  EXPECT_ERROR("format: 1\n", "bad.yaml", "expected entries");
  EXPECT_ERROR("format: 1\nentries: []\n", "bad.yaml", "expected entries");
}

TEST(BatteryError, MissingName) {
  EXPECT_ERROR(std::string(kHead) + "  - expect: clean_failure\n    fault: flush p=0.2\n",
               "bad.yaml: entries[1]", "expected a name");
}

TEST(BatteryError, DuplicateName) {
  EXPECT_ERROR(std::string(kHead) + "  - name: baseline\n    expect: success\n",
               "bad.yaml: entries[1]", "the name 'baseline' is taken by an earlier entry");
}

TEST(BatteryError, BadNameCharacters) {
  EXPECT_ERROR(std::string(kHead) + "  - name: flush all\n    expect: success\n",
               "bad.yaml: entries[1].name 'flush all'",
               "expected letters, digits, '_', '.', '-' (at most 64)");
  EXPECT_ERROR(std::string(kHead) + "  - name: ../etc\n    expect: success\n",
               "entries[1].name '../etc'", "expected letters");
  EXPECT_ERROR(std::string(kHead) + "  - name: " + std::string(65, 'a') + "\n    expect: success\n",
               "entries[1].name", "(at most 64)");
}

TEST(BatteryError, UnknownExpect) {
  EXPECT_ERROR(std::string(kHead) + "  - name: flush\n    fault: flush p=0.2\n    expect: crash\n",
               "bad.yaml: entries[1] (flush).expect 'crash'",
               "expected success, recovery or clean_failure");
  EXPECT_ERROR(std::string(kHead) + "  - name: flush\n    fault: flush p=0.2\n",
               "entries[1] (flush)", "expected expect: success|recovery|clean_failure");
}

TEST(BatteryError, ExpectSuccessWithAFault) {
  EXPECT_ERROR(
      std::string(kHead) + "  - name: flush\n    fault: flush p=0.2\n    expect: success\n",
      "bad.yaml: entries[1] (flush)",
      "expected expect: recovery or clean_failure for an entry with faults");
}

TEST(BatteryError, RecoveryWithoutAFault) {
  EXPECT_ERROR(std::string(kHead) + "  - name: nothing\n    expect: recovery\n",
               "bad.yaml: entries[1] (nothing)",
               "expected expect: success for an entry with no fault");
}

TEST(BatteryError, ABadRule) {
  EXPECT_ERROR(
      std::string(kHead) + "  - name: flood\n    fault: flood p=0.2\n    expect: clean_failure\n",
      "entries[1] (flood)", "flood");
  EXPECT_ERROR(std::string(kHead) +
                   "  - name: mix\n    faults: [flush p=0.2, flush p=7]\n    expect: recovery\n",
               "entries[1] (mix)");
  EXPECT_ERROR(std::string(kHead) + "  - name: mix\n    faults: []\n    expect: recovery\n",
               "entries[1] (mix).faults", "expected a list of rules");
}

TEST(BatteryError, FaultAndFaultsBoth) {
  EXPECT_ERROR(std::string(kHead) +
                   "  - name: both\n    fault: flush p=0.2\n    faults: [partial_poll p=0.5]\n"
                   "    expect: recovery\n",
               "bad.yaml: entries[1] (both)", "expected fault or faults, not both");
}

TEST(BatteryError, UnknownEntryField) {
  EXPECT_ERROR(std::string(kHead) +
                   "  - name: flush\n    fault: flush p=0.2\n"
                   "    expect: recovery\n    seeds: 3\n",
               "bad.yaml: entries[1]", "unknown field 'seeds'",
               "expected name, expect, fault or faults");
}

TEST(BatteryError, ASecondYamlDocument) {
  EXPECT_ERROR(std::string(kHead) + "---\n" + kHead, "bad.yaml",
               "expected one YAML document: a mapping with format, seeds, entries");
}

TEST(BatteryError, NotYamlAtAll) {
  EXPECT_ERROR("format: [1\nentries: {", "bad.yaml: not YAML:", "(line ");
  EXPECT_ERROR("just words", "bad.yaml", "expected one YAML document");
  EXPECT_ERROR("", "bad.yaml", "expected one YAML document");
}

TEST(BatteryError, AMissingFile) {
  try {
    read_battery("/nonexistent-verbfault-dir/battery.yaml");
    FAIL() << "no BatteryError";
  } catch (const BatteryError& error) {
    EXPECT_STREQ(error.what(),
                 "--battery '/nonexistent-verbfault-dir/battery.yaml': cannot read it (expected "
                 "default or a battery file)");
  }
}

}  // namespace
}  // namespace verbfault::cli

// Which process a rule is for (engine/plan/process_ref.h): the index of
// VERBFAULT_PROC or the name the process was started by.
#include "process_ref.h"

#include <gtest/gtest.h>

namespace verbfault::engine {
namespace {

TEST(ProcessRef, ARuleWithoutProcIsForEveryProcess) {
  const Rule rule = parse_rule("flush qp#0");
  EXPECT_TRUE(for_process(rule, {}));
  EXPECT_TRUE(for_process(rule, {0, "server"}));
}

TEST(ProcessRef, AnIndexMatchesThatMemberOnlyAndNeverAnUnknownOne) {
  const Rule rule = parse_rule("flush proc=1");
  EXPECT_TRUE(for_process(rule, {1, "client"}));
  EXPECT_FALSE(for_process(rule, {0, "client"}));
  EXPECT_FALSE(for_process(rule, {std::nullopt, "client"})) << "VERBFAULT_PROC unset: unknown";
  EXPECT_FALSE(for_process(rule, {std::nullopt, "1"})) << "an index is not a name";
}

TEST(ProcessRef, ANameMatchesEveryProcessOfThatNameWhateverItsIndex) {
  const Rule rule = parse_rule("flush proc=ib_write_bw");
  EXPECT_TRUE(for_process(rule, {0, "ib_write_bw"}));
  EXPECT_TRUE(for_process(rule, {1, "ib_write_bw"}));
  EXPECT_TRUE(for_process(rule, {std::nullopt, "ib_write_bw"}));
  EXPECT_FALSE(for_process(rule, {0, "ib_read_bw"}));
}

TEST(ProcessRef, ParsesIndexesAndNamesAndRejectsTheRest) {
  EXPECT_EQ(parse_process("0"), (ProcessRef{0, {}}));
  EXPECT_EQ(parse_process("63"), (ProcessRef{63, {}}));
  EXPECT_EQ(parse_process("sample_rc"), (ProcessRef{std::nullopt, "sample_rc"}));
  EXPECT_EQ(parse_process("64"), std::nullopt);
  EXPECT_EQ(parse_process(""), std::nullopt);
  EXPECT_EQ(parse_process("a b"), std::nullopt);
  EXPECT_EQ(parse_process("+x"), std::nullopt);
  EXPECT_EQ(parse_process(std::string(256, 'a')), std::nullopt);
  EXPECT_TRUE(parse_process(std::string(255, 'a')).has_value());
}

}  // namespace
}  // namespace verbfault::engine

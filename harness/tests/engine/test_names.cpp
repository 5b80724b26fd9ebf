// The fast name of a verb (to_string(Verb), an array by enum) agrees with
// the plan formats' table, name by name; the name tables outlive every
// exit handler.
#include "plan_names.h"

#include <malloc.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace verbfault {
namespace {

TEST(Names, EveryVerbHasTheNameThePlanFormatsUse) {
  ASSERT_EQ(engine::verb_names().size(), static_cast<std::size_t>(Verb::poll_cq) + 1);
  for (const auto& entry : engine::verb_names())
    EXPECT_EQ(to_string(entry.value), entry.name) << static_cast<int>(entry.value);
}

void print_names() {
  std::fprintf(stderr, "at exit: %s %s\n", to_string(ObjectRef{ObjectKind::context, 0}).c_str(),
               std::string(to_string(FaultKind::cq_overflow)).c_str());
}

// The end-of-run report is an exit handler registered before the first
// object is named: tables that static destruction freed before it ran
// named the context '?#0' (and read freed memory, issue 16). In a fresh
// process (threadsafe death test), with freed memory overwritten
// (M_PERTURB), a handler registered before the tables' first use still
// reads every name.
TEST(NamesDeathTest, TheNamesOutliveAnExitHandlerRegisteredBeforeTheirFirstUse) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        mallopt(M_PERTURB, 0xa5);
        std::atexit(print_names);
        std::fprintf(stderr, "now: %s\n", to_string(ObjectRef{ObjectKind::context, 0}).c_str());
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "at exit: context#0 cq_overflow");
}

}  // namespace
}  // namespace verbfault

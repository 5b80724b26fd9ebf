// VERBFAULT_ASSERT (sim/invariant.h): a broken invariant of the simulated
// device stops the process with one line naming where and what.
#include "invariant.h"

#include <gtest/gtest.h>

namespace {

TEST(Invariant, AHoldingInvariantCostsNothingVisible) {
  int checked = 0;
  VERBFAULT_ASSERT(++checked == 1, "evaluated once");
  EXPECT_EQ(checked, 1);
}

TEST(InvariantDeathTest, ABrokenOneAbortsNamingTheFileTheLineAndTheRule) {
  const int depth = 5, max_wr = 4;
  EXPECT_DEATH(VERBFAULT_ASSERT(depth <= max_wr, "a queue holds at most max_wr WRs"),
               "verbfault: internal error: the simulated device broke an invariant at "
               ".*invariant_tests.cpp:[0-9]+: depth <= max_wr \\(a queue holds at most max_wr "
               "WRs\\)");
}

}  // namespace

// proc= selectors through a Session: a rule for another process never
// fires in this one and keeps its index in the trace. This binary runs
// these tests as discovered (VERBFAULT_PROC unset: the index is unknown,
// only names match) and again with VERBFAULT_PROC=0 and =1 (CMakeLists.txt),
// reading the expectation from the variable as the harness read it.
#include "fault_fixture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace verbfault::testing {
namespace {

using ProcSelectors = FaultPair;

// VERBFAULT_PROC of this process, or -1.
int this_process() {
  const char* proc = std::getenv("VERBFAULT_PROC");
  return proc == nullptr ? -1 : std::atoi(proc);
}

// Rule #0 never fires (no qp#5); rule #1 is process 1's, on qp#0's first
// WR. In process 1 its fault record says rule 1, as in the plan.
TEST_F(ProcSelectors, ARuleForProcessOneFiresThereOnlyAndKeepsItsIndex) {
  begin("flush qp#5 nth=1; completion_error(rem_access_err) qp#0 proc=1 nth=1");
  ASSERT_EQ(recv_on_b(9), 0);
  ASSERT_EQ(send_a_to_b(1), 0);
  const std::vector<ibv_wc> polled = poll(cq_a_, 1);
  ASSERT_EQ(polled.size(), 1u);
  const bool mine = this_process() == 1;
  EXPECT_EQ(polled[0].status, mine ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS)
      << "VERBFAULT_PROC=" << this_process();
  EXPECT_EQ(session_->fired()[1], mine ? 1u : 0u);
  EXPECT_EQ(records_with(R"("fault":"completion_error","rule":1,)"), mine ? 1u : 0u);
  EXPECT_EQ(records_with(R"("rule":0,)"), 0u);
}

// A name matches whatever the index: this program is interposer_tests.
TEST_F(ProcSelectors, ANameMatchesTheProgramItNames) {
  begin(
      "completion_error(loc_len_err) qp#0 proc=not_this_program nth=1; "
      "completion_error(rem_access_err) qp#0 proc=interposer_tests nth=1");
  ASSERT_EQ(recv_on_b(9), 0);
  ASSERT_EQ(send_a_to_b(1), 0);
  const std::vector<ibv_wc> polled = poll(cq_a_, 1);
  ASSERT_EQ(polled.size(), 1u);
  EXPECT_EQ(polled[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(session_->fired(), (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(records_with(R"("fault":"completion_error","rule":1,)"), 1u);
}

}  // namespace
}  // namespace verbfault::testing

// The fast name of a verb (to_string(Verb), an array by enum) agrees with
// the plan formats' table, name by name.
#include "plan_names.h"

#include <gtest/gtest.h>

namespace verbfault {
namespace {

TEST(Names, EveryVerbHasTheNameThePlanFormatsUse) {
  ASSERT_EQ(engine::verb_names().size(), static_cast<std::size_t>(Verb::poll_cq) + 1);
  for (const auto& entry : engine::verb_names())
    EXPECT_EQ(to_string(entry.value), entry.name) << static_cast<int>(entry.value);
}

}  // namespace
}  // namespace verbfault

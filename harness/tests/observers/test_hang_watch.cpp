// The hang watchdog's judgement on its own (observers/checkers/hang_watch.h):
// looks with their time, the progress count and whether every thread was
// in sight.
#include "hang_watch.h"

#include <gtest/gtest.h>

namespace verbfault::checkers {
namespace {

constexpr std::uint64_t kSecond = 1'000'000'000;

TEST(HangWatch, QuietForTheWholeTimeWithEveryThreadInSightIsHung) {
  HangWatch watch(3 * kSecond);
  EXPECT_FALSE(watch.hung({0, 7, true}));
  EXPECT_FALSE(watch.hung({1 * kSecond, 7, true}));
  EXPECT_FALSE(watch.hung({2 * kSecond, 7, true}));
  EXPECT_EQ(watch.quiet_ns(2 * kSecond), 2 * kSecond);
  EXPECT_TRUE(watch.hung({3 * kSecond, 7, true}));
}

TEST(HangWatch, ProgressStartsTheQuietStretchAgain) {
  HangWatch watch(3 * kSecond);
  EXPECT_FALSE(watch.hung({0, 1, true}));
  EXPECT_FALSE(watch.hung({2 * kSecond, 2, true}));  // one verbs call made progress
  EXPECT_FALSE(watch.hung({4 * kSecond, 2, true}));
  EXPECT_TRUE(watch.hung({5 * kSecond, 2, true}));
}

TEST(HangWatch, AThreadOutOfSightMayBeWhatEndsTheWait) {
  HangWatch watch(3 * kSecond);
  EXPECT_FALSE(watch.hung({0, 1, true}));
  EXPECT_FALSE(watch.hung({2 * kSecond, 1, false}));  // computing, or reading a socket
  EXPECT_EQ(watch.quiet_ns(2 * kSecond), 0u);
  // The stretch starts at the next look that sees every thread.
  EXPECT_FALSE(watch.hung({3 * kSecond, 1, true}));
  EXPECT_FALSE(watch.hung({5 * kSecond, 1, true}));
  EXPECT_TRUE(watch.hung({6 * kSecond, 1, true}));
}

TEST(HangWatch, AThreadAlwaysOutOfSightIsNeverHung) {
  HangWatch watch(1 * kSecond);
  for (std::uint64_t t = 0; t < 100; ++t) EXPECT_FALSE(watch.hung({t * kSecond, 1, false}));
}

TEST(HangWatch, ZeroIsOff) {
  HangWatch watch(0);
  for (std::uint64_t t = 0; t < 100; ++t) EXPECT_FALSE(watch.hung({t * kSecond, 1, true}));
}

}  // namespace
}  // namespace verbfault::checkers

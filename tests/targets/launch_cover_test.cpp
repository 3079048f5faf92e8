// The launch cover of kevo-cuda-runner's timing (targets/runner/launch_cover.h),
// without a GPU: how the warm-up's host times set it, when a sample is taken
// again, and that a fixed cover never changes.
#include "targets/runner/launch_cover.h"

#include <gtest/gtest.h>

namespace kevo {
namespace {

// Warm-up calls of 10 us but for one slow tenth: the cover hides the slow
// tenth's 40 us (2 x 40 + 20 = 100 us with the 30 us flush: a 70 us cover),
// not the median's 10 us (which the 30 us flush alone would have hidden).
TEST(LaunchCover, TheWarmUpsSlowTenthSetsIt) {
  std::vector<double> warm(9, 10.0);
  warm.push_back(40.0);
  LaunchCover c(30, warm, -1);
  EXPECT_DOUBLE_EQ(c.cover_us(), 70);
  EXPECT_TRUE(c.hides(40));
  EXPECT_FALSE(c.hides(41));
  // Calls the flush hides alone need none.
  LaunchCover quick(30, std::vector<double>(10, 4.0), -1);
  EXPECT_DOUBLE_EQ(quick.cover_us(), 0);
  EXPECT_TRUE(quick.hides(5));
  EXPECT_FALSE(quick.hides(6));
}

// A long call rests the GPU: flush + cover at least twice the warm-up's
// median call, whatever its host time; a short call gets no rest; the rest
// stops at kMaxCoverUs; a fixed cover is the user's, rest or not. The
// host's rule still wins where it asks for more.
TEST(LaunchCover, ALongCallRestsTheGpu) {
  LaunchCover gemm(44, std::vector<double>(10, 6.0), -1, 190);
  EXPECT_DOUBLE_EQ(gemm.cover_us(), 2 * 190 - 44);
  LaunchCover quick(44, std::vector<double>(10, 6.0), -1, 12);
  EXPECT_DOUBLE_EQ(quick.cover_us(), 0);
  LaunchCover huge(44, std::vector<double>(10, 6.0), -1, 5000);
  EXPECT_DOUBLE_EQ(huge.cover_us(), LaunchCover::kMaxCoverUs);
  LaunchCover fixed(44, std::vector<double>(10, 6.0), 5, 190);
  EXPECT_DOUBLE_EQ(fixed.cover_us(), 5);
  LaunchCover slow_host(44, std::vector<double>(10, 150.0), -1, 160);
  EXPECT_DOUBLE_EQ(slow_host.cover_us(), 2 * 150 + 20 - 44);
  // A rested call is hidden; a slower one than the rest covers is taken again.
  EXPECT_FALSE(gemm.take_again(6, 0));
  EXPECT_TRUE(gemm.take_again(400, 0));
  EXPECT_DOUBLE_EQ(gemm.cover_us(), 2 * 400 + 20 - 44);
}

// A sample whose call outlasted the cover is taken again under a cover grown
// to fit it; a call the cover hides is kept; the retakes stop at kRetakes and
// the cover at kMaxCoverUs, after which slow samples are kept (and counted
// by the runner as outlasting).
TEST(LaunchCover, ASlowCallIsTakenAgainUnderALongerCover) {
  LaunchCover c(30, std::vector<double>(20, 10.0), -1);
  EXPECT_DOUBLE_EQ(c.cover_us(), 10);
  EXPECT_FALSE(c.take_again(10, 0));
  EXPECT_TRUE(c.take_again(300, 0));
  EXPECT_DOUBLE_EQ(c.cover_us(), 2 * 300 + 20 - 30);
  EXPECT_EQ(c.retaken(), 1);
  EXPECT_FALSE(c.take_again(300, 1000));  // hidden now
  EXPECT_TRUE(c.hides(300));
  for (int i = 0; i < LaunchCover::kRetakes - 1; ++i) EXPECT_TRUE(c.take_again(301 + i, 1000));
  EXPECT_EQ(c.retaken(), LaunchCover::kRetakes);
  EXPECT_FALSE(c.take_again(500, 1000));
  EXPECT_FALSE(c.hides(500));
  LaunchCover capped(30, {}, -1);
  EXPECT_TRUE(capped.take_again(5000, 0));
  EXPECT_DOUBLE_EQ(capped.cover_us(), LaunchCover::kMaxCoverUs);
  EXPECT_FALSE(capped.take_again(6000, 1000));  // the cover can grow no further
}

// A kernel that holds the host longer on each slow call, to have those
// samples dropped, gets one retake to begin with and then one for every ten
// samples kept: never more than about one sample in ten.
TEST(LaunchCover, RetakesStayAtOneInTenOfTheSamplesKept) {
  LaunchCover c(30, std::vector<double>(20, 10.0), -1);
  EXPECT_TRUE(c.take_again(100, 0));
  EXPECT_FALSE(c.take_again(200, 0));
  EXPECT_FALSE(c.take_again(200, 9));
  EXPECT_TRUE(c.take_again(200, 10));
  EXPECT_FALSE(c.take_again(300, 19));
  EXPECT_TRUE(c.take_again(300, 20));
  EXPECT_EQ(c.retaken(), 3);
}

TEST(LaunchCover, AFixedCoverIsNeverChanged) {
  LaunchCover c(30, std::vector<double>(10, 100.0), 50);
  EXPECT_DOUBLE_EQ(c.cover_us(), 50);
  EXPECT_FALSE(c.take_again(1000, 1000));
  EXPECT_DOUBLE_EQ(c.cover_us(), 50);
  EXPECT_EQ(c.retaken(), 0);
  EXPECT_FALSE(c.hides(1000));
  LaunchCover none(30, {}, 0);
  EXPECT_DOUBLE_EQ(none.cover_us(), 0);
}

}  // namespace
}  // namespace kevo

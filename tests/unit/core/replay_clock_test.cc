// ReplayClock: the schedule wall = wall0 + (trace - trace0) / speed and its re-anchoring.
#include "acmetrace/core/replay_clock.h"

#include <gtest/gtest.h>

namespace acmetrace::core {
namespace {

TEST(ReplayClockTest, SchedulesFromOneAnchor) {
  ReplayClock clock(360);
  clock.Start(/*wall_ms=*/1000, /*trace_ms=*/1'688'169'600'000);
  EXPECT_EQ(clock.DueWallMs(1'688'169'600'000), 1000);
  EXPECT_EQ(clock.DueWallMs(1'688'169'600'000 + 3'600'000), 1000 + 10'000);  // an hour in 10 s
  // A day later still exactly on the anchor's line: no accumulated drift.
  EXPECT_EQ(clock.DueWallMs(1'688'169'600'000 + 86'400'000), 1000 + 240'000);
  EXPECT_EQ(clock.TraceNowMs(1000 + 10'000), 1'688'169'600'000 + 3'600'000);
}

TEST(ReplayClockTest, MaxSpeedMakesEverythingDueAtOnce) {
  ReplayClock clock(0);
  clock.Start(500, 0);
  EXPECT_EQ(clock.DueWallMs(0), 500);
  EXPECT_EQ(clock.DueWallMs(86'400'000), 500);
}

TEST(ReplayClockTest, PauseHoldsTracePositionAndResumeContinuesFromIt) {
  ReplayClock clock(10);
  clock.Start(0, 0);
  clock.Pause(1000);  // trace at 10 s
  EXPECT_TRUE(clock.paused());
  EXPECT_FALSE(clock.DueWallMs(20'000).has_value());
  EXPECT_EQ(clock.TraceNowMs(50'000), 10'000);  // time stands still while paused
  clock.Resume(60'000);
  EXPECT_EQ(clock.TraceNowMs(60'000), 10'000);
  EXPECT_EQ(clock.DueWallMs(20'000), 61'000);  // 10 trace seconds after resuming, at speed 10
}

TEST(ReplayClockTest, SpeedChangeKeepsPosition) {
  ReplayClock clock(1);
  clock.Start(0, 0);
  clock.SetSpeed(100, 5000);  // trace at 5 s
  EXPECT_EQ(clock.TraceNowMs(5000), 5000);
  EXPECT_EQ(clock.DueWallMs(105'000), 6000);  // 100 s of trace in 1 s
  EXPECT_DOUBLE_EQ(clock.speed(), 100);
}

TEST(ReplayClockTest, SeekMovesTheClockAndBumpsGeneration) {
  ReplayClock clock(2);
  clock.Start(0, 0);
  const uint64_t before = clock.generation();
  clock.Seek(1'000'000, 7000);
  EXPECT_GT(clock.generation(), before);
  EXPECT_EQ(clock.TraceNowMs(7000), 1'000'000);
  EXPECT_EQ(clock.DueWallMs(1'002'000), 8000);
}

TEST(ReplayClockTest, ExtremeSpeedsSaturateInsteadOfOverflowing) {
  // A speed of 1e-15 over 3.5 months made llround overflow: everything came due at once.
  const int64_t start = 1'677'600'000'000, months = 3'600'000LL * 24 * 105;
  ReplayClock slow;
  slow.Start(0, start);
  slow.SetSpeed(1e-15, 0);
  ASSERT_TRUE(slow.DueWallMs(start + months).has_value());
  EXPECT_GT(*slow.DueWallMs(start + months), 1'000'000'000'000'000'000LL);  // far in the future, not now
  EXPECT_EQ(slow.TraceNowMs(1000), start);
  ReplayClock fast;
  fast.Start(0, start);
  fast.SetSpeed(1e308, 0);
  EXPECT_EQ(fast.DueWallMs(start + months), 0);
  EXPECT_GT(fast.TraceNowMs(INT64_MAX / 2), start);  // saturated, not wrapped below the start
}

}  // namespace
}  // namespace acmetrace::core

// A test suite's expensive preparation (synthesized data, a backfill, a reference run), made once per
// process from the first test's SetUp rather than in SetUpTestSuite. GoogleTest reports an ASSERT that
// fails in SetUpTestSuite as every test of the suite skipped, and CTest (gtest_discover_tests' skip
// pattern) then counts them skipped, not failed: a suite whose setup broke went through CI unseen.
// Here the failure is the first test's, and every later test of the process fails too.
#pragma once

#include <gtest/gtest.h>

namespace acmetrace::test {

enum class Prepared { kNotYet, kReady, kFailed };

/// Runs prepare (a function that may use ASSERT_*) the first time, and fails the calling test if it
/// failed, now or in an earlier test. Call it from SetUp; return if HasFatalFailure() afterwards.
inline void PrepareSuiteOnce(Prepared& state, void (*prepare)()) {
  if (state == Prepared::kNotYet) {
    prepare();
    state = ::testing::Test::HasFatalFailure() ? Prepared::kFailed : Prepared::kReady;
    if (state == Prepared::kFailed) return;  // the failure is reported where it happened
  }
  ASSERT_EQ(state, Prepared::kReady) << "the suite's preparation failed in an earlier test of this process";
}

}  // namespace acmetrace::test

// InputErrors: one "FILE:LINE: FIELD: reason" log line each, exact counts, strict mode, bounded output.
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "test_files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace acmetrace::core {
namespace {

// Every log line is stamped with the wall clock: the tests pin it.
class PinnedLogClock {
 public:
  PinnedLogClock() { SetLogClock([] { return int64_t{1688212800000}; }); }
  ~PinnedLogClock() { SetLogClock(nullptr); }
};

// Captures what InputErrors prints: log lines (core/log.h) at level warn from stage "input".
TEST(InputErrorsTest, PrintsOneLinePerErrorInTheDocumentedForm) {
  PinnedLogClock pinned;
  Captured out;
  InputErrors errors(out.file());
  errors.Report("seren", "job_trace", "data/job_trace/trace_seren.csv", 3, "gpu_num", "not a non-negative integer: 'x'");
  errors.ReportFile("kalos", "utilization", "data/utilization/kalos/GPU_UTIL.csv", "cannot open");
  EXPECT_EQ(out.text(),
            "2023-07-01T12:00:00.000Z WARN  input: data/job_trace/trace_seren.csv:3: gpu_num: not a non-negative integer: 'x'\n"
            "2023-07-01T12:00:00.000Z WARN  input: data/utilization/kalos/GPU_UTIL.csv: cannot open\n");
}

TEST(InputErrorsTest, CountsPerClusterAndKind) {
  InputErrors errors(nullptr);
  errors.Report("seren", "job_trace", "f", 2, "a", "r");
  errors.Report("seren", "job_trace", "f", 3, "a", "r");
  errors.Report("seren", "utilization", "g", 9, "b", "r");
  errors.ReportFile("kalos", "job_trace", "h", "r");
  EXPECT_EQ(errors.total(), 4);
  const auto counts = errors.counts();
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts.at({"seren", "job_trace"}), 2);
  EXPECT_EQ(counts.at({"seren", "utilization"}), 1);
  EXPECT_EQ(counts.at({"kalos", "job_trace"}), 1);
}

TEST(InputErrorsTest, RemembersTheFirstError) {
  InputErrors errors(nullptr);
  EXPECT_EQ(errors.first(), "");
  errors.Report("seren", "job_trace", "a.csv", 7, "queue", "not a number: 'q'");
  errors.Report("seren", "job_trace", "a.csv", 8, "duration", "not a number: 'd'");
  EXPECT_EQ(errors.first(), "a.csv:7: queue: not a number: 'q'");
}

TEST(InputErrorsTest, StrictModeStopsAtTheFirstError) {
  InputErrors lenient(nullptr, false);
  InputErrors strict(nullptr, true);
  EXPECT_FALSE(strict.must_stop());
  lenient.Report("seren", "job_trace", "a.csv", 2, "x", "y");
  strict.Report("seren", "job_trace", "a.csv", 2, "x", "y");
  EXPECT_FALSE(lenient.must_stop());
  EXPECT_TRUE(strict.must_stop());
}

TEST(InputErrorsTest, BoundsPrintedLinesButKeepsTheExactCount) {
  PinnedLogClock pinned;
  Captured out;
  InputErrors errors(out.file(), false, 2);
  for (int i = 1; i <= 5; ++i) errors.Report("seren", "utilization", "u.csv", i, "Time", "bad");
  errors.Finish();
  EXPECT_EQ(errors.total(), 5);
  EXPECT_EQ(out.text(),
            "2023-07-01T12:00:00.000Z WARN  input: u.csv:1: Time: bad\n"
            "2023-07-01T12:00:00.000Z WARN  input: u.csv:2: Time: bad\n"
            "2023-07-01T12:00:00.000Z WARN  input: 3 more input errors not shown\n");
}

TEST(InputErrorsTest, FinishIsSilentWhenNothingWasSuppressed) {
  PinnedLogClock pinned;
  Captured out;
  InputErrors errors(out.file(), false, 2);
  errors.Report("seren", "utilization", "u.csv", 1, "Time", "bad");
  errors.Finish();
  EXPECT_EQ(out.text(), "2023-07-01T12:00:00.000Z WARN  input: u.csv:1: Time: bad\n");
}

TEST(InputErrorsTest, CountsExactlyFromManyThreads) {
  InputErrors errors(nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&errors, t] {
      for (int i = 0; i < 1000; ++i) errors.Report(t % 2 == 0 ? "seren" : "kalos", "utilization", "f", i, "x", "y");
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.total(), 4000);
  EXPECT_EQ(errors.counts().at({"seren", "utilization"}), 2000);
  EXPECT_EQ(errors.counts().at({"kalos", "utilization"}), 2000);
}

TEST(InputErrorsTest, AnEmptyFieldLeavesItsSlotOut) {
  // A whole line has no field: "stdin:1: line: ..." and not "stdin:1: : line: ...".
  Captured out;
  InputErrors errors(out.file());
  errors.Report("", "record", "stdin", 1, "", "line: not a JSON object");
  EXPECT_EQ(out.messages(), "stdin:1: line: not a JSON object\n");
}

TEST(InputErrorsTest, QuotedValueShowsAShortValueWhole) {
  EXPECT_EQ(QuotedValue("abc"), "'abc'");
  EXPECT_EQ(QuotedValue(""), "''");
  EXPECT_EQ(QuotedValue(std::string(kMaxEchoedValueBytes, 'x')), "'" + std::string(kMaxEchoedValueBytes, 'x') + "'");
}

TEST(InputErrorsTest, QuotedValueTruncatesAHugeValueAndSaysItsSize) {
  const std::string huge(8 << 20, 'z');  // the 8 MiB cell
  const std::string shown = QuotedValue(huge);
  EXPECT_EQ(shown, "'" + std::string(kMaxEchoedValueBytes, 'z') + "'... (8388608 bytes)");
}

TEST(InputErrorsTest, QuotedValueKeepsTheMessageOnOneLine) {
  EXPECT_EQ(QuotedValue("a\nb\rc\td\x01"), "'a\\nb\\rc\\td\\x01'");
}

TEST(InputErrorsTest, AHugeFieldNameIsTruncatedToo) {
  Captured out;
  InputErrors errors(out.file());
  errors.Report("c", "utilization", "f.csv", 2, std::string(1 << 20, 'h'), "not a number: 'x'");
  EXPECT_EQ(out.messages(), "f.csv:2: " + std::string(kMaxEchoedValueBytes, 'h') + "...: not a number: 'x'\n");
}

}  // namespace
}  // namespace acmetrace::core

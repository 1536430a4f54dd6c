// The end of a data directory's trace time from its files' last rows (progress by trace time), and
// the span an EventStream reports: --from/--to where given, the data's end otherwise.
#include "acmetrace/producers/data_span.h"

#include <gtest/gtest.h>

#include <string>

#include "acmetrace/core/time.h"
#include "test_files.h"

namespace acmetrace::producers {
namespace {

constexpr int64_t kJul1 = 1688169600000;  // 2023-07-01 00:00:00 UTC

std::string UtilRows(int64_t first_s, int rows, int64_t step_s) {
  std::string text = "Time,10.140.1.10-0,10.140.1.10-1\n";
  for (int i = 0; i < rows; ++i) text += std::to_string(first_s + i * step_s) + ",99.0,12.5\n";
  return text;
}

TEST(DataSpanTest, LastRowOfAUtilizationFile) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_UTIL.csv", UtilRows(kJul1 / 1000, 5, 15));
  EXPECT_EQ(LastTimeInCsvTail(path), kJul1 + 60'000);
}

TEST(DataSpanTest, ReadsOnlyTheTailOfALargeFileAndSkipsItsCutFirstLine) {
  const std::string dir = TestDir();
  // ~4 MB of rows; a 4 KiB tail starts mid-row, and the cut row must not count.
  const std::string path = WriteFile(dir, "GPU_UTIL.csv", UtilRows(kJul1 / 1000, 150'000, 15));
  EXPECT_EQ(LastTimeInCsvTail(path, 4096), kJul1 + 149'999LL * 15'000);
}

TEST(DataSpanTest, JobTraceTakesTheLatestOfItsTimeColumnsInTheLastRows) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "trace_seren.csv",
      "\xEF\xBB\xBFjob_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,"
      "gpu_time\r\n"
      "1,u1,1,8,128,Other,COMPLETED,2023-07-01 08:00:00+08:00,2023-07-01 08:00:10+08:00,2023-07-01 "
      "09:00:00+08:00,3590,10,28720.0\r\n"
      "2,u1,1,8,128,Other,CANCELLED,2023-07-01 08:30:00+08:00,,,0,0,0.0\r\n");
  // Job 1 ends at 09:00 +08:00 (01:00 UTC), after job 2's submit (00:30 UTC); job 2 never started.
  EXPECT_EQ(LastTimeInCsvTail(path), kJul1 + 3'600'000);
}

TEST(DataSpanTest, NothingToGoByIsUnknown) {
  const std::string dir = TestDir();
  EXPECT_EQ(LastTimeInCsvTail(WriteFile(dir, "header_only.csv", "Time,10.140.1.10-0\n")), std::nullopt);
  EXPECT_EQ(LastTimeInCsvTail(WriteFile(dir, "no_time.csv", "a,b\n1,2\n")), std::nullopt);
  EXPECT_EQ(LastTimeInCsvTail(WriteFile(dir, "bad_time.csv", "Time,a\nyesterday,2\n")), std::nullopt);
  EXPECT_EQ(LastTimeInCsvTail(dir + "/missing.csv"), std::nullopt);
}

TEST(DataSpanTest, EstimateIsTheLatestOverEveryFile) {
  const std::string dir = TestDir();
  DataDirFiles files;
  files.utilization.push_back(
      {"seren",
       {WriteFile(dir, "GPU_UTIL-2023-06.csv", UtilRows(kJul1 / 1000 - 3600, 10, 60)),
        WriteFile(dir, "GPU_UTIL-2023-07.csv", UtilRows(kJul1 / 1000, 10, 60))}});
  files.ipmi.push_back(WriteFile(dir, "GPU_C_Power.csv", "Time,Sys_Total_Power\n" +
                                                             std::to_string(kJul1 / 1000 + 7200) + ",2520\n"));
  EXPECT_EQ(EstimateLastTimeMs(files), kJul1 + 7'200'000);
  EXPECT_EQ(EstimateLastTimeMs(DataDirFiles{}), std::nullopt);
}

TEST(DataSpanTest, EventStreamSpanIsFromAndToOrTheDataEnd) {
  const std::string dir = TestDir();
  WriteFile(dir, "data/utilization/seren/GPU_UTIL.csv", UtilRows(kJul1 / 1000, 61, 60));  // one hour
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = dir;
  core::Result<std::unique_ptr<EventStream>> all = EventStream::Open(options, errors);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all.value()->span().first_ms, std::nullopt);  // the first record's time, known when it comes
  EXPECT_EQ(all.value()->span().last_ms, kJul1 + 3'600'000);

  options.range.from_ms = kJul1 + 600'000;
  options.range.to_ms = kJul1 + 1'800'000;
  core::Result<std::unique_ptr<EventStream>> part = EventStream::Open(options, errors);
  ASSERT_TRUE(part.ok()) << part.status().message();
  EXPECT_EQ(part.value()->span().first_ms, kJul1 + 600'000);
  EXPECT_EQ(part.value()->span().last_ms, kJul1 + 1'800'000 - 1);  // --to is exclusive

  options.range.to_ms = kJul1 + 86'400'000;  // past the data: the data's end
  core::Result<std::unique_ptr<EventStream>> past = EventStream::Open(options, errors);
  ASSERT_TRUE(past.ok()) << past.status().message();
  EXPECT_EQ(past.value()->span().last_ms, kJul1 + 3'600'000);
}

}  // namespace
}  // namespace acmetrace::producers

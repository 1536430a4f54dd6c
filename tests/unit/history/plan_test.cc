// What a backfill says before it starts: the default window (the telemetry's span, the job
// traces' without telemetry; --from/--to override either end), the scrapes in it, the samples.
#include "acmetrace/history/plan.h"

#include <gtest/gtest.h>

#include "test_files.h"

namespace acmetrace::history {
namespace {

// A day of telemetry (16:00Z to 15:59:45Z next day, two nodes of two GPUs) whose jobs end a week later.
std::string DayWithJobsAfterIt() {
  const std::string dir = TestDir();
  WriteFile(dir, "data/utilization/seren/GPU_UTIL.csv",
            "Time,n1-0,n1-1,n2-0,n2-1\n1688140800,1,2,3,4\n1688140815,1,2,3,4\n1688227185,1,2,3,4\n");
  WriteFile(dir, "data/utilization/seren/NODE_CPU_UTILIZATION.csv",
            "Time,n1,n2\n1688140800,0.5,0.5\n1688227185,0.5,0.5\n");
  WriteFile(dir, "data/job_trace/trace_seren.csv",
            "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
            "1,u,1,8,1,Other,COMPLETED,2023-07-01 00:02:58+08:00,2023-07-01 00:03:00+08:00,"
            "2023-07-08 16:41:02+08:00,1,0,8.0\n");
  return dir;
}

producers::DataDirFiles Files(const std::string& dir) {
  core::Result<producers::DataDirFiles> files = producers::ListDataDir(dir, {});
  EXPECT_TRUE(files.ok()) << files.status().message();
  return files.value();
}

TEST(PlanTest, TheDefaultWindowIsTheTelemetrysSpanAndSaysWhereTheJobsEnd) {
  const BackfillPlan plan = PlanBackfill(Files(DayWithJobsAfterIt()), {}, 15'000, true);
  EXPECT_EQ(plan.window.from_ms, 1688140800000);
  EXPECT_EQ(plan.window.to_ms, 1688227185001);  // the last row included, nothing after it
  EXPECT_TRUE(plan.from_data_start);
  EXPECT_TRUE(plan.to_data_end);
  EXPECT_TRUE(plan.telemetry);
  ASSERT_TRUE(plan.jobs_end_ms.has_value());
  EXPECT_EQ(*plan.jobs_end_ms, 1688805662000);  // 2023-07-08T08:41:02Z: the way to widen it
  EXPECT_EQ(FormatFlagTime(*plan.jobs_end_ms), "2023-07-08T08:41:02Z");
  EXPECT_EQ(plan.scrapes, 5760);  // a day at 15 s
  // Samples: one series per GPU column and node column under the persona, `up` per node, the
  // exporter's own series.
  EXPECT_EQ(plan.samples_per_scrape, 4 + 2 + 2 + 350);
  EXPECT_EQ(plan.samples, plan.samples_per_scrape * 5760);
  EXPECT_EQ(PlanBackfill(Files(DayWithJobsAfterIt()), {}, 15'000, false).samples_per_scrape, 350);
}

TEST(PlanTest, FromAndToOverrideEitherEnd) {
  const std::string dir = DayWithJobsAfterIt();
  producers::TimeRange to_only;
  to_only.to_ms = 1688805663000;
  BackfillPlan plan = PlanBackfill(Files(dir), to_only, 15'000, true);
  EXPECT_EQ(plan.window.from_ms, 1688140800000);
  EXPECT_EQ(plan.window.to_ms, 1688805663000);
  EXPECT_TRUE(plan.from_data_start);
  EXPECT_FALSE(plan.to_data_end);
  EXPECT_FALSE(plan.jobs_end_ms.has_value());  // the window holds them
  producers::TimeRange from_only;
  from_only.from_ms = 1688220000000;
  plan = PlanBackfill(Files(dir), from_only, 15'000, true);
  EXPECT_EQ(plan.window.from_ms, 1688220000000);
  EXPECT_EQ(plan.window.to_ms, 1688227185001);
  EXPECT_FALSE(plan.from_data_start);
}

TEST(PlanTest, WithoutTelemetryTheWindowIsTheJobTracesSpan) {
  const std::string dir = TestDir();
  WriteFile(dir, "data/job_trace/trace_seren.csv",
            "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
            "1,u,1,8,1,Other,COMPLETED,2023-07-01 00:00:00+08:00,2023-07-01 00:00:10+08:00,"
            "2023-07-01 02:00:00+08:00,1,0,8.0\n");
  const BackfillPlan plan = PlanBackfill(Files(dir), {}, 15'000, true);
  EXPECT_FALSE(plan.telemetry);
  EXPECT_EQ(plan.window.from_ms, 1688140800000);
  EXPECT_EQ(plan.window.to_ms, 1688148000001);
}

TEST(PlanTest, AStepLongerThanTheWindowIsStillOneScrape) {
  producers::TimeRange two_hours;
  two_hours.from_ms = 1688140800000 + 60'000;
  two_hours.to_ms = two_hours.from_ms + 7'200'000;
  EXPECT_EQ(PlanBackfill(Files(DayWithJobsAfterIt()), two_hours, 86'400'000, true).scrapes, 1);
}

}  // namespace
}  // namespace acmetrace::history

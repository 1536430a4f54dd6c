// Summary: the release's cluster_summary.csv columns, computed by hand for small job sets.
#include "acmetrace/producers/summary.h"
#include "test_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace acmetrace::producers {
namespace {

constexpr char kSerenHeader[] =
    "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n";
constexpr char kSerenRow[] =
    "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
    "2023-03-01 00:20:51+08:00,117,32,936.0\n";
constexpr char kKalosHeader[] =
    "job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time,"
    "end_time,fail_time,stop_time,duration,queue,gpu_time\n";
constexpr char kKalosRow[] =
    "dlctk696s0jbvitv,uf794,8,64,960,1000,100.0,Other,FAILED,2023-05-17 11:00:58+00:00,2023-05-17 11:01:08+00:00,"
    "2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,18,10.0,1152.0\n";
// The header of the release's data/cluster_summary.csv, verbatim.
constexpr char kReleaseHeader[] =
    "id,job_num,cpu_job_num,gpu_job_num,avg_run_time_gpu,avg_que_time_gpu,avg_gpu_num,med_run_time_gpu,"
    "med_que_time_gpu,med_gpu_num,max_run_time_gpu,max_gpu,complete_rate_gpu,cancel_rate_gpu,fail_rate_gpu,"
    "complete_gpu_time,cancel_gpu_time,fail_gpu_time,complete_rate_gpu_time,cancel_rate_gpu_time,"
    "fail_rate_gpu_time,avg_run_time_cpu,avg_que_time_cpu,med_run_time_cpu,med_que_time_cpu,complete_rate_cpu,"
    "cancel_rate_cpu,fail_rate_cpu\n";

std::string Summarize(const std::vector<std::string>& files, core::InputErrors& errors) {
  core::Result<std::string> csv = SummarizeJobTraces(files, errors);
  EXPECT_TRUE(csv.ok()) << csv.status().message();
  return csv.ok() ? csv.value() : "";
}

// A Seren row with the summary's inputs; times are fixed (the summary uses published numbers).
std::string Job(const std::string& id, int gpus, const std::string& state, const std::string& duration,
                const std::string& queue, const std::string& gpu_time) {
  return id + ",u1,1," + std::to_string(gpus) + ",8,Eval," + state +
         ",2023-03-01 00:00:00+08:00,2023-03-01 00:00:01+08:00,2023-03-01 00:01:00+08:00," + duration + "," +
         queue + "," + gpu_time + "\n";
}

TEST(FormatSummaryNumberTest, WritesNumbersAsTheReleaseDoes) {
  EXPECT_EQ(FormatSummaryNumber(5.68), "5.68");
  EXPECT_EQ(FormatSummaryNumber(122.0), "122.0");
  EXPECT_EQ(FormatSummaryNumber(1414.335), "1414.335");
  EXPECT_EQ(FormatSummaryNumber(1414.33512), "1414.335");
  EXPECT_EQ(FormatSummaryNumber(0.0), "0.0");
  EXPECT_EQ(FormatSummaryNumber(1.0), "1.0");
  EXPECT_EQ(FormatSummaryNumber(0.5), "0.5");
  EXPECT_EQ(FormatSummaryNumber(9600.0 / 10536.0), "0.911");
  EXPECT_EQ(FormatSummaryNumber(2.0 / 3.0), "0.667");
  EXPECT_EQ(FormatSummaryNumber(0.0004), "0.0");
  EXPECT_EQ(FormatSummaryNumber(4560592618.0), "4560592618.0");
  EXPECT_EQ(FormatSummaryNumber(1209604.0), "1209604.0");
  EXPECT_EQ(FormatSummaryNumber(NAN), "");
}

TEST(SummaryTest, ColumnsAreTheReleases) {
  std::string header;
  for (const std::string& c : SummaryColumns()) header += (header.empty() ? "" : ",") + c;
  EXPECT_EQ(header + "\n", kReleaseHeader);
}

TEST(SummaryTest, TheRealSerenRow) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv", std::string(kSerenHeader) + kSerenRow);
  core::InputErrors errors(nullptr);
  EXPECT_EQ(Summarize({path}, errors),
            std::string(kReleaseHeader) +
                "Seren,1,0,1,117.0,32.0,8.0,117.0,32.0,8.0,117.0,8.0,0.0,0.0,1.0,0.0,0.0,936.0,0.0,0.0,1.0,,,,,,,\n");
}

TEST(SummaryTest, TheRealKalosRowTakesDurationAndQueueAsPublished) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_kalos.csv", std::string(kKalosHeader) + kKalosRow);
  core::InputErrors errors(nullptr);
  // duration 18 (not end - start = 8), queue 10.0.
  EXPECT_EQ(Summarize({path}, errors),
            std::string(kReleaseHeader) +
                "Kalos,1,0,1,18.0,10.0,64.0,18.0,10.0,64.0,18.0,64.0,0.0,0.0,1.0,0.0,0.0,1152.0,0.0,0.0,1.0,,,,,,,\n");
}

TEST(SummaryTest, OneRowPerClusterInFileOrder) {
  const std::string dir = TestDir();
  const std::string kalos = WriteFile(dir, "trace_kalos.csv", std::string(kKalosHeader) + kKalosRow);
  const std::string seren = WriteFile(dir, "trace_seren.csv", std::string(kSerenHeader) + kSerenRow);
  core::InputErrors errors(nullptr);
  EXPECT_EQ(Summarize({kalos, seren}, errors),
            std::string(kReleaseHeader) +
                "Kalos,1,0,1,18.0,10.0,64.0,18.0,10.0,64.0,18.0,64.0,0.0,0.0,1.0,0.0,0.0,1152.0,0.0,0.0,1.0,,,,,,,\n"
                "Seren,1,0,1,117.0,32.0,8.0,117.0,32.0,8.0,117.0,8.0,0.0,0.0,1.0,0.0,0.0,936.0,0.0,0.0,1.0,,,,,,,\n");
}

TEST(SummaryTest, TheFixtureTraces) {
  const std::string dir = std::string(ACMETRACE_FIXTURES) + "/release/data/job_trace";
  core::InputErrors errors(nullptr);
  // GPU jobs: 8 GPUs 117 s queue 32 FAILED 936; 16 GPUs 600 s queue 0 CANCELLED 9600.
  // CPU job: 60 s queue 1 COMPLETED. Shares of GPU time: 9600/10536 = 0.911, 936/10536 = 0.089.
  EXPECT_EQ(Summarize({dir + "/trace_seren.csv", dir + "/trace_kalos.csv"}, errors),
            std::string(kReleaseHeader) +
                "Seren,3,1,2,358.5,16.0,12.0,358.5,16.0,12.0,600.0,16.0,0.0,0.5,0.5,0.0,9600.0,936.0,0.0,0.911,0.089,"
                "60.0,1.0,60.0,1.0,1.0,0.0,0.0\n"
                "Kalos,1,0,1,18.0,10.0,64.0,18.0,10.0,64.0,18.0,64.0,0.0,0.0,1.0,0.0,0.0,1152.0,0.0,0.0,1.0,,,,,,,\n");
}

TEST(SummaryTest, CpuAndGpuJobsFailedStatesAndTimeShares) {
  const std::string dir = TestDir();
  // Rows not in any particular order; TIMEOUT and NODE_FAIL count as failed.
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + Job("c2", 0, "FAILED", "7", "3", "0.0") +
                                         Job("g3", 2, "TIMEOUT", "50", "4", "100.0") +
                                         Job("g1", 8, "COMPLETED", "100", "10", "800.0") +
                                         Job("c1", 0, "COMPLETED", "5", "1", "0.0") +
                                         Job("g4", 4, "NODE_FAIL", "30", "2", "120.0") +
                                         Job("g2", 1, "CANCELLED", "20", "0", "20.0") +
                                         Job("c3", 0, "CANCELLED", "9", "8", "0.0"));
  core::InputErrors errors(nullptr);
  // GPU: run 20,30,50,100 (mean 50, median 40); queue 0,2,4,10 (mean 4, median 3); GPUs 1,2,4,8 (mean
  // 3.75, median 3); 1 completed, 1 cancelled, 2 failed of 4; GPU time 800 / 20 / 220 of 1040.
  // CPU: run 5,7,9; queue 1,3,8; one of each state.
  EXPECT_EQ(Summarize({path}, errors),
            std::string(kReleaseHeader) +
                "Seren,7,3,4,50.0,4.0,3.75,40.0,3.0,3.0,100.0,8.0,0.25,0.25,0.5,800.0,20.0,220.0,0.769,0.019,0.212,"
                "7.0,4.0,7.0,3.0,0.333,0.333,0.333\n");
  EXPECT_EQ(errors.total(), 0);
}

TEST(ClusterSummaryTest, MedianOfAnEvenCountIsTheMeanOfTheTwoMiddleValues) {
  ClusterSummary summary;
  const double runs[] = {100, 1, 7, 3, 1000, 5};  // sorted: 1 3 5 7 100 1000 -> (5 + 7) / 2
  int i = 0;
  for (double run : runs) {
    JobRow row;
    row.job_id = std::to_string(i++);
    row.gpu_num = i;  // 1..6 -> median 3.5
    row.state = "COMPLETED";
    row.duration_s = run;
    row.queue_s = i % 2;  // 1 0 1 0 1 0 -> median 0.5
    row.gpu_time = run * row.gpu_num;
    summary.Add(row);
  }
  const std::vector<std::string> v = summary.Values("Seren");
  const auto& columns = SummaryColumns();
  ASSERT_EQ(v.size(), columns.size());
  auto at = [&](const std::string& name) {
    return v[std::find(columns.begin(), columns.end(), name) - columns.begin()];
  };
  EXPECT_EQ(at("med_run_time_gpu"), "6.0");
  EXPECT_EQ(at("med_gpu_num"), "3.5");
  EXPECT_EQ(at("med_que_time_gpu"), "0.5");
  EXPECT_EQ(at("avg_run_time_gpu"), "186.0");
  EXPECT_EQ(at("max_run_time_gpu"), "1000.0");
  EXPECT_EQ(at("max_gpu"), "6.0");
  EXPECT_EQ(at("complete_rate_gpu"), "1.0");
  EXPECT_EQ(at("complete_rate_gpu_time"), "1.0");
  EXPECT_EQ(at("avg_run_time_cpu"), "");  // no CPU jobs: empty cells, as the release writes them
  EXPECT_EQ(summary.jobs(), 6);
}

TEST(ClusterSummaryTest, SkipsMissingPublishedNumbersInMeansButCountsTheJob) {
  ClusterSummary summary;
  JobRow a;
  a.gpu_num = 2;
  a.state = "COMPLETED";
  a.duration_s = 10;
  a.queue_s = 4;
  a.gpu_time = 20;
  JobRow b = a;
  b.duration_s = NAN;  // never ran: empty duration
  b.queue_s = NAN;
  b.gpu_time = NAN;
  b.state = "CANCELLED";
  summary.Add(a);
  summary.Add(b);
  const std::vector<std::string> v = summary.Values("Seren");
  EXPECT_EQ(v[1], "2");      // job_num
  EXPECT_EQ(v[3], "2");      // gpu_job_num
  EXPECT_EQ(v[4], "10.0");   // avg_run_time_gpu
  EXPECT_EQ(v[5], "4.0");    // avg_que_time_gpu
  EXPECT_EQ(v[12], "0.5");   // complete_rate_gpu
  EXPECT_EQ(v[13], "0.5");   // cancel_rate_gpu
  EXPECT_EQ(v[18], "1.0");   // complete_rate_gpu_time
}

TEST(SummaryTest, SkipsAndCountsMalformedRows) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + kSerenRow + "bad,u,1,x,1,Other,FAILED,,,,,,\n");
  core::InputErrors errors(nullptr);
  EXPECT_EQ(Summarize({path}, errors),
            std::string(kReleaseHeader) +
                "Seren,1,0,1,117.0,32.0,8.0,117.0,32.0,8.0,117.0,8.0,0.0,0.0,1.0,0.0,0.0,936.0,0.0,0.0,1.0,,,,,,,\n");
  EXPECT_EQ(errors.total(), 1);
}

TEST(SummaryTest, StrictModeFailsAtTheFirstMalformedRow) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + "bad,u,1,x,1,Other,FAILED,,,,,,\n" + kSerenRow);
  core::InputErrors errors(nullptr, /*strict=*/true);
  const core::Result<std::string> csv = SummarizeJobTraces({path}, errors);
  ASSERT_FALSE(csv.ok());
  EXPECT_NE(csv.status().message().find(path + ":2: gpu_num"), std::string::npos) << csv.status().message();
}

TEST(SummaryTest, MissingFileIsAnErrorNamingIt) {
  core::InputErrors errors(nullptr);
  const std::string path = testing::TempDir() + "acmetrace_missing/trace_seren.csv";
  const core::Result<std::string> csv = SummarizeJobTraces({path}, errors);
  ASSERT_FALSE(csv.ok());
  EXPECT_NE(csv.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace acmetrace::producers

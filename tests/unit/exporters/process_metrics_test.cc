// process_* from /proc text (parsed from fixed strings: no test reads its own /proc for values).
#include "acmetrace/exporters/process_metrics.h"

#include <gtest/gtest.h>

namespace acmetrace::exporters {
namespace {

// A real /proc/PID/stat line of a process whose command name holds a space and a parenthesis.
constexpr std::string_view kStat =
    "4242 (acme trace) S 1 4242 4242 0 -1 4194560 2385 0 0 0 250 75 0 0 20 0 5 0 12000 220553216 2270 "
    "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

TEST(ProcessMetricsTest, ProcStatGivesCpuMemoryAndStartTime) {
  ProcessStats stats;
  ASSERT_TRUE(ParseProcStat(kStat, /*ticks_per_second=*/100, /*page_size=*/4096, /*boot=*/1'700'000'000, stats).ok());
  EXPECT_DOUBLE_EQ(stats.cpu_seconds, 3.25);  // (250 + 75) ticks
  EXPECT_DOUBLE_EQ(stats.start_time_seconds, 1'700'000'120.0);  // boot + 12000 ticks
  EXPECT_DOUBLE_EQ(stats.virtual_bytes, 220553216.0);
  EXPECT_DOUBLE_EQ(stats.resident_bytes, 2270.0 * 4096.0);
}

TEST(ProcessMetricsTest, ATruncatedStatNamesTheMissingField) {
  ProcessStats stats;
  const core::Status s = ParseProcStat("4242 (acmetrace) S 1 4242 4242 0 -1 4194560 2385 0 0 0 250", 100, 4096, 0, stats);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stime"), std::string::npos) << s.message();
  EXPECT_FALSE(ParseProcStat("no parenthesis", 100, 4096, 0, stats).ok());
}

TEST(ProcessMetricsTest, LimitsGiveTheSoftOpenFilesLimit) {
  constexpr std::string_view kLimits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max processes             63459                63459                processes \n"
      "Max open files            1024                 1048576              files     \n";
  core::Result<int64_t> max = ParseMaxOpenFiles(kLimits);
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(max.value(), 1024);
  EXPECT_EQ(ParseMaxOpenFiles("Max open files            unlimited            unlimited            files\n").value(), 0);
  EXPECT_FALSE(ParseMaxOpenFiles("Max processes 5 5 processes\n").ok());
}

TEST(ProcessMetricsTest, BootTimeComesFromTheBtimeLine) {
  core::Result<double> boot = ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1796130000\nprocesses 7\n");
  ASSERT_TRUE(boot.ok());
  EXPECT_EQ(boot.value(), 1796130000.0);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n").ok());
}

TEST(ProcessMetricsTest, TextHasClientGolangsNamesAndTypes) {
  ProcessStats stats;
  stats.cpu_seconds = 3.25;
  stats.open_fds = 12;
  stats.max_fds = 1024;
  std::string text;
  AppendProcessMetrics(text, stats);
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.25\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE process_open_fds gauge\nprocess_open_fds 12\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE process_max_fds gauge\nprocess_max_fds 1024\n"), std::string::npos);
  for (const char* name : {"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_start_time_seconds"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " gauge\n"), std::string::npos) << name;
  }
}

TEST(ProcessMetricsTest, ThisProcessCanBeRead) {
  core::Result<ProcessStats> stats = ReadProcessStats();
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_GT(stats.value().resident_bytes, 0);
  EXPECT_GE(stats.value().open_fds, 3);  // at least stdin, stdout, stderr (and the fd directory itself)
  EXPECT_FALSE(ReadProcessStats("/nonexistent/proc").ok());
}

TEST(ProcessMetricsTest, BuildInfoCarriesTheProjectVersion) {
  std::string text;
  AppendBuildInfo(text);
  EXPECT_NE(text.find("# TYPE acmetrace_build_info gauge\n"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_build_info{version=\"" + std::string(GetBuildInfo().version) + "\",revision=\""),
            std::string::npos)
      << text;
  EXPECT_EQ(GetBuildInfo().version, ACMETRACE_PROJECT_VERSION);  // CMake's project(VERSION)
  EXPECT_FALSE(GetBuildInfo().revision.empty());
}

}  // namespace
}  // namespace acmetrace::exporters

// UtilizationSource: wide per-metric CSVs (and split METRIC-2023-*.csv files) merged into one
// record per node per sample time.
#include "acmetrace/producers/utilization_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "acmetrace/core/record_json.h"
#include "test_files.h"

namespace acmetrace::producers {
namespace {

// Every record's JSON value, in order.
std::vector<std::string> Json(UtilizationSource& source) {
  std::vector<std::string> out;
  while (const core::Record* r = source.Next()) {
    std::string line;
    core::AppendRecordJson(line, *r);
    out.push_back(line);
  }
  return out;
}

std::string Record(const std::string& cluster, const std::string& node, int64_t ts_ms, const std::string& gpu,
                   const std::string& host) {
  return R"({"v":1,"cluster":")" + cluster + R"(","node":")" + node + R"(","ts_ms":)" + std::to_string(ts_ms) +
         R"(,"gpu":{)" + gpu + R"(},"host":{)" + host + "}}";
}

constexpr int64_t kT = 1688169600000;  // 2023-07-01 08:00:00+08:00

TEST(ParseUtilizationColumnTest, GpuColumns) {
  auto t = ParseUtilizationColumn("10.140.1.10-6", true);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "10.140.1.10");
  EXPECT_EQ(t->gpu, 6);
  t = ParseUtilizationColumn("lingjun-pod9-0016-3", true);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "lingjun-pod9-0016");
  EXPECT_EQ(t->gpu, 3);
  t = ParseUtilizationColumn("10.140.1.10-6.1", true);  // pandas duplicate of a GPU column
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "10.140.1.10");
  EXPECT_EQ(t->gpu, 6);
  t = ParseUtilizationColumn(" 10.140.1.10-0 ", true);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "10.140.1.10");
  EXPECT_EQ(t->gpu, 0);
  EXPECT_FALSE(ParseUtilizationColumn("10.140.1.10", true).has_value());
  EXPECT_FALSE(ParseUtilizationColumn("10.140.1.10-x", true).has_value());
  EXPECT_FALSE(ParseUtilizationColumn("-3", true).has_value());
  EXPECT_FALSE(ParseUtilizationColumn("", true).has_value());
}

TEST(ParseUtilizationColumnTest, HostColumns) {
  auto t = ParseUtilizationColumn("10.140.1.10", false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "10.140.1.10");
  EXPECT_EQ(t->gpu, -1);
  t = ParseUtilizationColumn("10.140.1.10-mlx5_0", false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "10.140.1.10");
  EXPECT_EQ(t->gpu, -1);
  t = ParseUtilizationColumn("10.140.0.131.1", false);  // pandas duplicate column
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "10.140.0.131");
  t = ParseUtilizationColumn("10.140.0.131.12", false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "10.140.0.131");
  t = ParseUtilizationColumn("lingjun-pod9-0016", false);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->node, "lingjun-pod9-0016");
  EXPECT_FALSE(ParseUtilizationColumn("", false).has_value());
}

TEST(MetricNameOfFileTest, WholeAndSplitFiles) {
  EXPECT_EQ(MetricNameOfFile("GPU_UTIL.csv"), "GPU_UTIL");
  EXPECT_EQ(MetricNameOfFile("data/utilization/seren/GPU_UTIL.csv"), "GPU_UTIL");
  EXPECT_EQ(MetricNameOfFile("GPU_UTIL-2023-07-01.csv"), "GPU_UTIL");
  EXPECT_EQ(MetricNameOfFile("NODE_IB_SEND-2023-07.csv"), "NODE_IB_SEND");
  EXPECT_EQ(MetricNameOfFile("GPU_TEMP-2023.csv"), "GPU_TEMP");
  EXPECT_EQ(MetricNameOfFile("NODE_CPU_UTILIZATION.csv"), "NODE_CPU_UTILIZATION");
  EXPECT_EQ(MetricNameOfFile("GPU_UTIL.pkl"), "");
  EXPECT_EQ(MetricNameOfFile("README"), "");
}

TEST(IsDcgmMetricNameTest, KnowsTheReleasesGpuMetrics) {
  for (const char* m : {"XID_ERRORS", "GPU_TEMP", "MEMORY_TEMP", "MEM_CLOCK", "MEM_COPY_UTIL", "FB_FREE", "FB_USED",
                        "DRAM_ACTIVE", "POWER_USAGE", "GPU_UTIL", "PIPE_TENSOR_ACTIVE", "SM_ACTIVE", "SM_OCCUPANCY"}) {
    EXPECT_TRUE(IsDcgmMetricName(m)) << m;
  }
  for (const char* m : {"NODE_CPU_UTILIZATION", "NODE_MEMORY_UTILIZATION", "NODE_IB_SEND", "NODE_IB_RECEIVE"}) {
    EXPECT_FALSE(IsDcgmMetricName(m)) << m;
  }
}

TEST(UtilizationSourceTest, MergesAllMetricFilesIntoOneRecordPerNodePerTimeInNodeOrder) {
  const std::string dir = TestDir();
  std::vector<std::string> files = {
      WriteFile(dir, "NODE_IB_SEND.csv", "Time,10.140.1.11-mlx5_0\n1688169615,12345\n"),
      WriteFile(dir, "GPU_UTIL.csv",
                "Time,10.140.1.13-0,10.140.1.13-1,10.140.1.11-0,10.140.1.11-1\n"
                "1688169600,99,98,10,\n"
                "1688169615,97,,,\n"),
      WriteFile(dir, "NODE_CPU_UTILIZATION.csv",
                "Time,10.140.1.13,10.140.1.11,10.140.1.12\n"
                "1688169600,0.08101,0.437,0.5\n"
                "1688169615,,0.2,\n"),
      WriteFile(dir, "GPU_TEMP.csv",
                "Time,10.140.1.11-0,10.140.1.11-1,10.140.1.13-0,10.140.1.13-1\n"
                "1688169600,41,40,45,44\n"
                "1688169615,42,,46,\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  EXPECT_EQ(source.metrics(),
            (std::vector<std::string>{"GPU_TEMP", "GPU_UTIL", "NODE_CPU_UTILIZATION", "NODE_IB_SEND"}));
  EXPECT_EQ(Json(source),
            (std::vector<std::string>{
                Record("seren", "10.140.1.11", kT, R"("GPU_TEMP":[41,40],"GPU_UTIL":[10,null])",
                       R"("NODE_CPU_UTILIZATION":0.437)"),
                Record("seren", "10.140.1.12", kT, "", R"("NODE_CPU_UTILIZATION":0.5)"),
                Record("seren", "10.140.1.13", kT, R"("GPU_TEMP":[45,44],"GPU_UTIL":[99,98])",
                       R"("NODE_CPU_UTILIZATION":0.08101)"),
                // 10.140.1.11 has no GPU_UTIL sample at all now: no GPU_UTIL entry.
                Record("seren", "10.140.1.11", kT + 15000, R"("GPU_TEMP":[42,null])",
                       R"("NODE_CPU_UTILIZATION":0.2,"NODE_IB_SEND":12345)"),
                // 10.140.1.12 has no sample at this time: no record.
                Record("seren", "10.140.1.13", kT + 15000, R"("GPU_TEMP":[46,null],"GPU_UTIL":[97,null])", ""),
            }));
  EXPECT_EQ(errors.total(), 0);
  EXPECT_TRUE(source.status().ok());
}

TEST(UtilizationSourceTest, KeysRecordsByClusterAndNode) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-0\n1688169600,5\n")};
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  const core::Record* r = source.Next();
  ASSERT_NE(r, nullptr);
  std::string key;
  core::AppendKey(key, *r);
  EXPECT_EQ(key, "seren/10.140.1.10");
  EXPECT_EQ(core::TopicOf(*r), "acme.util");
  EXPECT_EQ(source.Next(), nullptr);
}

TEST(UtilizationSourceTest, AcceptsUnixSecondsAndIsoTimes) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-0\n1688169600,1\n1688169615.0,2\n"),
      WriteFile(dir, "NODE_CPU_UTILIZATION.csv",
                "Time,10.140.1.10\n2023-07-01 08:00:00+08:00,8.101\n2023-07-01T00:00:15Z,67.47\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  EXPECT_EQ(Json(source),
            (std::vector<std::string>{
                Record("seren", "10.140.1.10", kT, R"("GPU_UTIL":[1])", R"("NODE_CPU_UTILIZATION":8.101)"),
                Record("seren", "10.140.1.10", kT + 15000, R"("GPU_UTIL":[2])", R"("NODE_CPU_UTILIZATION":67.47)"),
            }));
  EXPECT_EQ(errors.total(), 0);
}

TEST(UtilizationSourceTest, MapsPodNamedColumnsToNodeAndGpuIndex) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {WriteFile(dir, "GPU_UTIL.csv",
                                                    "Time,lingjun-pod9-0016-0,lingjun-pod9-0016-3,lingjun-pod9-0002-1\n"
                                                    "1684321260,100,0,50\n")};
  core::InputErrors errors(nullptr);
  UtilizationSource source("kalos", files, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{
                              Record("kalos", "lingjun-pod9-0002", 1684321260000, R"("GPU_UTIL":[null,50])", ""),
                              Record("kalos", "lingjun-pod9-0016", 1684321260000, R"("GPU_UTIL":[100,null,null,0])", ""),
                          }));
  EXPECT_EQ(errors.total(), 0);
}

TEST(UtilizationSourceTest, MapsHostColumnsWithAndWithoutNicSuffix) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "NODE_IB_SEND.csv", "Time,10.140.1.10-mlx5_0,10.140.1.11\n1688169600,1,2\n"),
      WriteFile(dir, "NODE_IB_RECEIVE.csv", "Time,10.140.1.10,10.140.1.11-mlx5_0\n1688169600,3,4\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  EXPECT_EQ(Json(source),
            (std::vector<std::string>{
                Record("seren", "10.140.1.10", kT, "", R"("NODE_IB_RECEIVE":3,"NODE_IB_SEND":1)"),
                Record("seren", "10.140.1.11", kT, "", R"("NODE_IB_RECEIVE":4,"NODE_IB_SEND":2)"),
            }));
}

TEST(UtilizationSourceTest, FoldsPandasDuplicatedColumnsIntoTheirNode) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "NODE_CPU_UTILIZATION.csv",
                "Time,10.140.0.131,10.140.0.130,10.140.0.131.1\n"
                "1688169600,0.1,0.2,0.9\n"
                "1688169615,0.3,0.4,\n"),
      WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.0.131-0,10.140.0.131-0.1\n1688169600,7,8\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  EXPECT_EQ(Json(source),
            (std::vector<std::string>{
                Record("seren", "10.140.0.130", kT, "", R"("NODE_CPU_UTILIZATION":0.2)"),
                Record("seren", "10.140.0.131", kT, R"("GPU_UTIL":[7])", R"("NODE_CPU_UTILIZATION":0.1)"),
                Record("seren", "10.140.0.130", kT + 15000, "", R"("NODE_CPU_UTILIZATION":0.4)"),
                Record("seren", "10.140.0.131", kT + 15000, "", R"("NODE_CPU_UTILIZATION":0.3)"),
            }));
  EXPECT_EQ(errors.total(), 0);
}

TEST(UtilizationSourceTest, ReadsSplitFilesInOrderAndDropsTheSeamRowKeepingTheFirst) {
  const std::string dir = TestDir();
  // Given out of order on purpose: the source sorts them by name (= date).
  const std::vector<std::string> files = {
      WriteFile(dir, "GPU_TEMP-2023-07-02.csv",
                "Time,10.140.1.10-0,10.140.1.10-1\n"
                "1688169615,99,99\n"  // the seam row again, different values: dropped
                "1688169630,43,41\n"),
      WriteFile(dir, "GPU_TEMP-2023-07-01.csv",
                "Time,10.140.1.10-0,10.140.1.10-1\n"
                "1688169600,41,40\n"
                "1688169615,42,40\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  EXPECT_EQ(source.metrics(), (std::vector<std::string>{"GPU_TEMP"}));
  EXPECT_EQ(Json(source), (std::vector<std::string>{
                              Record("seren", "10.140.1.10", kT, R"("GPU_TEMP":[41,40])", ""),
                              Record("seren", "10.140.1.10", kT + 15000, R"("GPU_TEMP":[42,40])", ""),
                              Record("seren", "10.140.1.10", kT + 30000, R"("GPU_TEMP":[43,41])", ""),
                          }));
  EXPECT_EQ(source.duplicates_dropped(), 1);
  EXPECT_EQ(errors.total(), 0);
}

TEST(UtilizationSourceTest, ReadsTheFixtureClusterDirectory) {
  const std::string dir = std::string(ACMETRACE_FIXTURES) + "/release/data/utilization/seren";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  const int64_t t = 1677601080000;
  EXPECT_EQ(Json(source),
            (std::vector<std::string>{
                Record("seren", "10.140.1.10", t, R"("GPU_TEMP":[41,40],"GPU_UTIL":[99,0])",
                       R"("NODE_CPU_UTILIZATION":0.08101,"NODE_IB_SEND":12345)"),
                Record("seren", "10.140.1.11", t, R"("GPU_UTIL":[null,100])", R"("NODE_CPU_UTILIZATION":0.437)"),
                Record("seren", "10.140.1.10", t + 15000, R"("GPU_TEMP":[42,40],"GPU_UTIL":[98,1])",
                       R"("NODE_CPU_UTILIZATION":0.1)"),
                Record("seren", "10.140.1.11", t + 15000, R"("GPU_UTIL":[50,null])", R"("NODE_CPU_UTILIZATION":0.2)"),
                Record("seren", "10.140.1.10", t + 30000, R"("GPU_TEMP":[43,41])", ""),
            }));
  EXPECT_EQ(source.duplicates_dropped(), 1);
  EXPECT_EQ(errors.total(), 0);
  EXPECT_GT(source.bytes_total(), 0);
  EXPECT_EQ(source.bytes_read(), source.bytes_total());
}

TEST(UtilizationSourceTest, HeaderOnlyFileIsAnEmptyMetric) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "GPU_UTIL.csv", "Time,lingjun-pod9-0016-0,lingjun-pod9-0016-3\n1684321260,100,0\n"),
      WriteFile(dir, "GPU_TEMP.csv", "Time,lingjun-pod9-0016-0\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("kalos", files, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{Record("kalos", "lingjun-pod9-0016", 1684321260000,
                                                           R"("GPU_UTIL":[100,null,null,0])", "")}));
  EXPECT_EQ(errors.total(), 0);
}

TEST(UtilizationSourceTest, TimesWithNoSampleAtAllGiveNoRecords) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-0,10.140.1.11-0\n1688169600,,\n1688169615,,4\n1688169630,,\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{Record("seren", "10.140.1.11", kT + 15000, R"("GPU_UTIL":[4])", "")}));
  EXPECT_EQ(errors.total(), 0);
}

TEST(UtilizationSourceTest, ReportsABadCellWithFileLineAndColumnAndKeepsTheRestOfTheRow) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_UTIL.csv",
                                     "Time,10.140.1.10-0,10.140.1.10-1,10.140.1.11-0\n"
                                     "1688169600,1,2,3\n"
                                     "1688169615,4,oops,6\n"
                                     "1688169630,7,8,9\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{
                              Record("seren", "10.140.1.10", kT, R"("GPU_UTIL":[1,2])", ""),
                              Record("seren", "10.140.1.11", kT, R"("GPU_UTIL":[3])", ""),
                              Record("seren", "10.140.1.10", kT + 15000, R"("GPU_UTIL":[4,null])", ""),
                              Record("seren", "10.140.1.11", kT + 15000, R"("GPU_UTIL":[6])", ""),
                              Record("seren", "10.140.1.10", kT + 30000, R"("GPU_UTIL":[7,8])", ""),
                              Record("seren", "10.140.1.11", kT + 30000, R"("GPU_UTIL":[9])", ""),
                          }));
  EXPECT_EQ(out.messages(), path + ":3: 10.140.1.10-1: not a number: 'oops'\n");
  EXPECT_EQ(errors.counts().at({"seren", "utilization"}), 1);
}

TEST(UtilizationSourceTest, ReportsBadAndBackwardTimesAndSkipsThoseRows) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_UTIL.csv",
                                     "Time,10.140.1.10-0\n"
                                     "1688169600,1\n"
                                     "noon,2\n"
                                     "1688169630,3\n"
                                     "1688169615,4\n"
                                     "1688169645,5\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{
                              Record("seren", "10.140.1.10", kT, R"("GPU_UTIL":[1])", ""),
                              Record("seren", "10.140.1.10", kT + 30000, R"("GPU_UTIL":[3])", ""),
                              Record("seren", "10.140.1.10", kT + 45000, R"("GPU_UTIL":[5])", ""),
                          }));
  const std::string text = out.messages();
  EXPECT_EQ(text.rfind(path + ":3: Time: ", 0), 0u) << text;
  EXPECT_NE(text.find("\n" + path + ":5: Time: "), std::string::npos) << text;
  EXPECT_EQ(errors.total(), 2);
}

TEST(UtilizationSourceTest, ShortRowsReadMissingCellsAsNoSample) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-0,10.140.1.10-1\n1688169600,1\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{Record("seren", "10.140.1.10", kT, R"("GPU_UTIL":[1,null])", "")}));
  EXPECT_EQ(out.messages().rfind(path + ":2: row: ", 0), 0u) << out.messages();
}

TEST(UtilizationSourceTest, FileWithoutTimeColumnIsReportedAndSkipped) {
  const std::string dir = TestDir();
  const std::string bad = WriteFile(dir, "GPU_TEMP.csv", "When,10.140.1.10-0\n1688169600,40\n");
  const std::string good = WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-0\n1688169600,1\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {bad, good}, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{Record("seren", "10.140.1.10", kT, R"("GPU_UTIL":[1])", "")}));
  EXPECT_EQ(out.messages().rfind(bad + ":1: Time: ", 0), 0u) << out.messages();
}

TEST(UtilizationSourceTest, HonoursTheHalfOpenRange) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-0\n1688169600,1\n1688169615,2\n1688169630,3\n1688169645,4\n"),
      WriteFile(dir, "NODE_CPU_UTILIZATION.csv", "Time,10.140.1.10\n1688169600,0.1\n1688169630,0.3\n"),
  };
  core::InputErrors errors(nullptr);
  TimeRange range;
  range.from_ms = kT + 15000;
  range.to_ms = kT + 45000;
  UtilizationSource source("seren", files, errors, range);
  EXPECT_EQ(Json(source), (std::vector<std::string>{
                              Record("seren", "10.140.1.10", kT + 15000, R"("GPU_UTIL":[2])", ""),
                              Record("seren", "10.140.1.10", kT + 30000, R"("GPU_UTIL":[3])",
                                     R"("NODE_CPU_UTILIZATION":0.3)"),
                          }));
}

// Cells are parsed as a row is split, before its Time is judged: a bad cell is reported only in a
// row that is kept, not in one dropped for its time (before --from, a repeated or backward Time),
// nor in an ignored column.
TEST(UtilizationSourceTest, ReportsBadCellsOnlyInRowsThatAreKept) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_UTIL.csv",
                                     "Time,10.140.1.10-0,junk\n"
                                     "1688169600,bad1,x\n"
                                     "1688169615,2,x\n"
                                     "1688169615,bad2,x\n"
                                     "1688169600,bad3,x\n"
                                     "1688169630,bad4,x\n");
  Captured out;
  core::InputErrors errors(out.file());
  TimeRange range;
  range.from_ms = kT + 15000;
  UtilizationSource source("seren", {path}, errors, range);
  EXPECT_EQ(Json(source), (std::vector<std::string>{Record("seren", "10.140.1.10", kT + 15000, R"("GPU_UTIL":[2])", "")}));
  const std::string text = out.messages();
  EXPECT_EQ(text.find("bad1"), std::string::npos) << text;
  EXPECT_EQ(text.find("bad2"), std::string::npos) << text;
  EXPECT_EQ(text.find("bad3"), std::string::npos) << text;
  EXPECT_NE(text.find(path + ":6: 10.140.1.10-0: not a number: 'bad4'"), std::string::npos) << text;
  EXPECT_NE(text.find(path + ":5: Time: goes back in time"), std::string::npos) << text;
  EXPECT_EQ(text.find("'x'"), std::string::npos) << text;
  EXPECT_EQ(errors.total(), 3) << text;  // the junk column, the backward Time, bad4
}

TEST(UtilizationSourceTest, DecidesGpuOrHostColumnsForUnknownMetrics) {
  const std::string dir = TestDir();
  const std::vector<std::string> files = {
      WriteFile(dir, "NEW_GPU_METRIC.csv", "Time,10.140.1.10-0,10.140.1.10-1\n1688169600,1,2\n"),
      WriteFile(dir, "NEW_HOST_METRIC.csv", "Time,10.140.1.10\n1688169600,3\n"),
  };
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{Record("seren", "10.140.1.10", kT, R"("NEW_GPU_METRIC":[1,2])",
                                                           R"("NEW_HOST_METRIC":3)")}));
}

TEST(UtilizationSourceTest, ManyTimesAndNodesStayOrdered) {
  const std::string dir = TestDir();
  std::string util = "Time";
  std::string temp = "Time";
  for (int n = 20; n >= 10; --n) {
    for (int g = 0; g < 8; ++g) {
      util += ",10.140.1." + std::to_string(n) + "-" + std::to_string(g);
      temp += ",10.140.1." + std::to_string(n) + "-" + std::to_string(g);
    }
  }
  util += "\n";
  temp += "\n";
  for (int t = 0; t < 200; ++t) {
    const std::string ts = std::to_string(1688169600 + 15 * t);
    util += ts;
    temp += ts;
    for (int c = 0; c < 88; ++c) {
      util += "," + std::to_string((t + c) % 101);
      temp += (t + c) % 5 == 0 ? "," : "," + std::to_string(30 + c % 40);
    }
    util += "\n";
    temp += "\n";
  }
  const std::vector<std::string> files = {WriteFile(dir, "GPU_UTIL.csv", util), WriteFile(dir, "GPU_TEMP.csv", temp)};
  core::InputErrors errors(nullptr);
  UtilizationSource source("seren", files, errors, {});
  int64_t last_ts = 0;
  std::string last_node;
  int records = 0;
  while (const core::Record* r = source.Next()) {
    const auto& s = std::get<core::UtilSample>(*r);
    if (s.ts_ms == last_ts) {
      ASSERT_LT(last_node, s.node);
    } else {
      ASSERT_GT(s.ts_ms, last_ts);
    }
    last_ts = s.ts_ms;
    last_node = s.node;
    ASSERT_EQ(s.gpu.size(), 2u);
    EXPECT_EQ(s.gpu[0].name, "GPU_TEMP");
    EXPECT_EQ(s.gpu[1].name, "GPU_UTIL");
    ASSERT_EQ(s.gpu[1].values.size(), 8u);
    ++records;
  }
  EXPECT_EQ(records, 200 * 11);
  EXPECT_EQ(errors.total(), 0);
}

// The reading thread keeps more rows ahead for a narrow file (fewer, larger handovers between the
// threads) and the minimum for a wide one, so memory stays bounded by about kBytesAhead.
TEST(UtilizationMetricReaderTest, KeepsMoreRowsAheadForNarrowFiles) {
  using R = UtilizationMetricReader;
  EXPECT_EQ(R::RowsAheadFor(0), R::kMaxRowsAhead);
  EXPECT_EQ(R::RowsAheadFor(232), R::kMaxRowsAhead);  // 29 nodes x 8 GPUs: 1.9 kB a row
  EXPECT_EQ(R::RowsAheadFor(R::kBytesAhead / sizeof(double) / 100), 100u);
  EXPECT_EQ(R::RowsAheadFor(2288), R::kMinRowsAhead);  // 286 nodes x 8 GPUs: 18 kB a row
  EXPECT_EQ(R::RowsAheadFor(100'000), R::kMinRowsAhead);
}

// Narrow and wide files of many more rows than the read-ahead pool: every row arrives once, in
// order, with its values, across the pool's growth and every handover.
TEST(UtilizationSourceTest, ReadsEveryRowOfFilesLongerThanTheReadAhead) {
  const std::string dir = TestDir();
  for (const int nodes : {1, 300}) {  // 8 and 2,400 columns: the most rows ahead and the fewest
    std::string util = "Time";
    for (int n = 0; n < nodes; ++n) {
      for (int g = 0; g < 8; ++g) {
        util += ",10.140." + std::to_string(n / 250) + "." + std::to_string(n % 250) + "-" + std::to_string(g);
      }
    }
    util += "\n";
    const int rows = nodes == 1 ? 5000 : 400;
    for (int t = 0; t < rows; ++t) {
      util += std::to_string(1688169600 + 15 * t);
      for (int c = 0; c < nodes * 8; ++c) util += "," + std::to_string((t + c) % 101);
      util += "\n";
    }
    const std::vector<std::string> files = {WriteFile(dir, "GPU_UTIL.csv", util)};
    core::InputErrors errors(nullptr);
    UtilizationSource source("seren", files, errors, {});
    int records = 0;
    while (const core::Record* r = source.Next()) {
      const auto& s = std::get<core::UtilSample>(*r);
      const int t = records / nodes;
      ASSERT_EQ(s.ts_ms, kT + 15'000 * t) << nodes << " nodes, record " << records;
      ASSERT_EQ(s.gpu.size(), 1u);
      ASSERT_EQ(s.gpu[0].values.size(), 8u);
      // Column c holds (t + c) % 101, so a node's GPUs count up from its first; with one node, from t.
      for (int g = 0; g < 8; ++g) {
        ASSERT_EQ(static_cast<int>(s.gpu[0].values[g]), (static_cast<int>(s.gpu[0].values[0]) + g) % 101)
            << nodes << " nodes, record " << records << ", GPU " << g;
      }
      if (nodes == 1) {
        ASSERT_EQ(s.gpu[0].values[0], t % 101) << "record " << records;
      }
      ++records;
    }
    EXPECT_EQ(records, rows * nodes) << nodes << " nodes";
    EXPECT_EQ(errors.total(), 0);
  }
}

// The reading runs ahead on a thread of its own: a source dropped mid-file (a replay stopped by
// --to, a signal or a strict error) stops it without waiting for the file's end, and whatever was
// read before is exactly what the file holds.
TEST(UtilizationSourceTest, StoppingMidFileStopsTheReadingThread) {
  const std::string dir = TestDir();
  std::string util = "Time,10.140.1.10-0,10.140.1.11-0\n";
  for (int k = 0; k < 5000; ++k) util += std::to_string(1688169600 + 15 * k) + ",1.5,2.25\n";
  const std::vector<std::string> files = {WriteFile(dir, "GPU_UTIL.csv", util)};
  core::InputErrors errors(nullptr);
  for (int records_read : {0, 1, 7, 33}) {
    auto source = std::make_unique<UtilizationSource>("seren", files, errors, TimeRange{});
    for (int k = 0; k < records_read; ++k) {
      const core::Record* r = source->Next();
      ASSERT_NE(r, nullptr);
      const auto& s = std::get<core::UtilSample>(*r);
      EXPECT_EQ(s.ts_ms, kT + 15'000 * (k / 2));
      EXPECT_EQ(s.gpu[0].values[0], k % 2 == 0 ? 1.5 : 2.25);
    }
    source.reset();  // joins the reading thread, which may be waiting for room
  }
  EXPECT_EQ(errors.total(), 0);
}

TEST(UtilizationSourceTest, AYear9999RowIsReportedAndTheRowsAfterItAreKept) {
  // The issue: row 3 in year 9999 was emitted and every later good row skipped as "goes back in time".
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_UTIL.csv",
                                     "Time,10.140.1.10-0\n"
                                     "1688169600,1\n"
                                     "9999-01-01 00:00:00+00:00,2\n"
                                     "1688169615,3\n"
                                     "4841740800,4\n"
                                     "1688169630,5\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{
                              Record("seren", "10.140.1.10", kT, R"("GPU_UTIL":[1])", ""),
                              Record("seren", "10.140.1.10", kT + 15000, R"("GPU_UTIL":[3])", ""),
                              Record("seren", "10.140.1.10", kT + 30000, R"("GPU_UTIL":[5])", ""),
                          }));
  EXPECT_EQ(out.messages(), path + ":3: Time: outside the accepted years 2000-2099: '9999-01-01 00:00:00+00:00'; row skipped\n" +
                            path + ":5: Time: outside the accepted years 2000-2099: '4841740800'; row skipped\n");
}

TEST(UtilizationSourceTest, InfinityNanAndOverflowingCellsAreReportedAsNotNumbers) {
  // They were emitted as null with no error.
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "GPU_UTIL.csv",
                                     "Time,10.140.1.10-0,10.140.1.10-1,10.140.1.10-2,10.140.1.10-3\n"
                                     "1688169600,inf,nan,1e400,1e308\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  EXPECT_EQ(Json(source), (std::vector<std::string>{
                              Record("seren", "10.140.1.10", kT, R"("GPU_UTIL":[null,null,null,1e+308])", "")}));
  EXPECT_EQ(out.messages(), path + ":2: 10.140.1.10-0: not a number: 'inf'\n" + path +
                            ":2: 10.140.1.10-1: not a number: 'nan'\n" + path +
                            ":2: 10.140.1.10-2: not a number: '1e400'\n");
}

TEST(UtilizationSourceTest, AHugeBadCellIsShownTruncated) {
  const std::string dir = TestDir();
  const std::string cell(8 << 20, 'q');  // 8 MiB: it was echoed whole, 8 MB of stderr per cell
  const std::string path = WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-0\n1688169600," + cell + "\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  Json(source);
  EXPECT_EQ(out.messages(), path + ":2: 10.140.1.10-0: not a number: '" + std::string(64, 'q') + "'... (8388608 bytes)\n");
}

TEST(UtilizationSourceTest, AGpuIndexOfSixtyFourOrMoreIsNotAGpuColumn) {
  const std::string dir = TestDir();
  const std::string path =
      WriteFile(dir, "GPU_UTIL.csv", "Time,10.140.1.10-63,10.140.1.10-64,10.140.1.10-999\n1688169600,1,2,3\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  const std::vector<std::string> json = Json(source);
  ASSERT_EQ(json.size(), 1u);
  EXPECT_NE(json[0].find(",1]"), std::string::npos) << json[0];  // GPU 63, after 63 nulls
  EXPECT_EQ(errors.total(), 2);
  EXPECT_NE(out.messages().find(path + ":1: 10.140.1.10-64: not a GPU column"), std::string::npos) << out.messages();
}

TEST(UtilizationSourceTest, ColumnsNamedLongerThanANameMayBeMakeNoNode) {
  // 20 extra columns named with 2 MiB each took run to 1.78 GB and raised flags on the fake nodes.
  const std::string dir = TestDir();
  std::string header = "Time,10.140.1.10";
  std::string row = "1688169600,50";
  for (int i = 0; i < 20; ++i) {
    header += "," + std::string(2 << 20, static_cast<char>('a' + i));
    row += ",7";
  }
  const std::string path = WriteFile(dir, "NODE_CPU_UTILIZATION.csv", header + "\n" + row + "\n");
  Captured out;
  core::InputErrors errors(out.file());
  UtilizationSource source("seren", {path}, errors, {});
  const std::vector<std::string> json = Json(source);
  ASSERT_EQ(json.size(), 1u);  // the one real node
  EXPECT_NE(json[0].find(R"("node":"10.140.1.10")"), std::string::npos) << json[0].substr(0, 200);
  EXPECT_EQ(errors.total(), 20);
  EXPECT_NE(out.messages().find(path + ":1: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...: column name of "
                                       "2097152 bytes, more than 256; column ignored"),
            std::string::npos)
      << out.messages().substr(0, 400);
  EXPECT_LT(out.messages().size(), 20u * 400) << "the names are not echoed whole";
}

}  // namespace
}  // namespace acmetrace::producers

// JobTraceReader: the release's real rows parse exactly; schemas by header; every malformed row is
// one reported line with the right number, and the rest of the file is still read.
#include "acmetrace/producers/job_trace_reader.h"
#include "acmetrace/core/record.h"
#include "test_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
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

// Captures what InputErrors prints.
std::vector<JobRow> ReadAll(JobTraceReader& reader) {
  std::vector<JobRow> rows;
  JobRow row;
  while (reader.Next(row)) rows.push_back(row);
  return rows;
}

void ExpectSerenExampleRow(const JobRow& r) {
  EXPECT_EQ(r.job_id, "5778432");
  EXPECT_EQ(r.user, "u5907");
  EXPECT_EQ(r.node_num, 1);
  EXPECT_EQ(r.gpu_num, 8);
  EXPECT_EQ(r.cpu_num, 128);
  EXPECT_EQ(r.type, "Other");
  EXPECT_EQ(r.state, "FAILED");
  EXPECT_EQ(r.submit_ms, 1677601102000);
  EXPECT_EQ(r.start_ms, 1677601134000);
  EXPECT_EQ(r.end_ms, 1677601251000);
  EXPECT_EQ(r.duration_s, 117.0);
  EXPECT_EQ(r.queue_s, 32.0);
  EXPECT_EQ(r.gpu_time, 936.0);
}

TEST(JobTraceReaderTest, ParsesTheRealSerenRowExactly) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv", std::string(kSerenHeader) + kSerenRow);
  core::InputErrors errors(nullptr);
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  EXPECT_EQ(reader.cluster(), "seren");
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);
  ExpectSerenExampleRow(rows[0]);
  EXPECT_EQ(reader.rows_read(), 1);
  EXPECT_EQ(errors.total(), 0);
  EXPECT_TRUE(reader.status().ok());
}

TEST(JobTraceReaderTest, ParsesTheRealKalosRowAsPublished) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_kalos.csv", std::string(kKalosHeader) + kKalosRow);
  core::InputErrors errors(nullptr);
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  EXPECT_EQ(reader.cluster(), "kalos");
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);
  const JobRow& r = rows[0];
  EXPECT_EQ(r.job_id, "dlctk696s0jbvitv");
  EXPECT_EQ(r.user, "uf794");
  EXPECT_EQ(r.node_num, 8);
  EXPECT_EQ(r.gpu_num, 64);
  EXPECT_EQ(r.cpu_num, 960);
  EXPECT_EQ(r.type, "Other");
  EXPECT_EQ(r.state, "FAILED");
  EXPECT_EQ(r.submit_ms, 1684321258000);
  EXPECT_EQ(r.start_ms, 1684321268000);
  EXPECT_EQ(r.end_ms, 1684321276000);
  // Published values, not recomputed: end - start is 8 s, but Kalos' duration is end - submit.
  EXPECT_EQ(r.duration_s, 18.0);
  EXPECT_EQ(r.queue_s, 10.0);
  EXPECT_EQ(r.gpu_time, 1152.0);
  EXPECT_EQ(errors.total(), 0);  // the empty stop_time is fine
}

TEST(JobTraceReaderTest, ReadsBothFixtureTraces) {
  core::InputErrors errors(nullptr);
  JobTraceReader seren(errors);
  ASSERT_TRUE(seren.Open(std::string(ACMETRACE_FIXTURES) + "/release/data/job_trace/trace_seren.csv").ok());
  const std::vector<JobRow> rows = ReadAll(seren);
  ASSERT_EQ(rows.size(), 3u);
  ExpectSerenExampleRow(rows[0]);
  EXPECT_EQ(rows[1].gpu_num, 0);
  EXPECT_EQ(rows[2].type, "Pretrain");
  JobTraceReader kalos(errors);
  ASSERT_TRUE(kalos.Open(std::string(ACMETRACE_FIXTURES) + "/release/data/job_trace/trace_kalos.csv").ok());
  EXPECT_EQ(ReadAll(kalos).size(), 1u);
  EXPECT_EQ(errors.total(), 0);
}

TEST(JobTraceReaderTest, DetectsTheClusterFromTheNameOrTheSchema) {
  const std::string dir = TestDir();
  core::InputErrors errors(nullptr);
  {
    JobTraceReader reader(errors);
    ASSERT_TRUE(reader.Open(WriteFile(dir, "jobs_a.csv", std::string(kKalosHeader) + kKalosRow)).ok());
    EXPECT_EQ(reader.cluster(), "kalos");  // fail_time/stop_time columns
  }
  {
    JobTraceReader reader(errors);
    ASSERT_TRUE(reader.Open(WriteFile(dir, "jobs_b.csv", std::string(kSerenHeader) + kSerenRow)).ok());
    EXPECT_EQ(reader.cluster(), "seren");
  }
  {
    JobTraceReader reader(errors);
    ASSERT_TRUE(reader.Open(WriteFile(dir, "trace_venus.csv", std::string(kSerenHeader) + kSerenRow)).ok());
    EXPECT_EQ(reader.cluster(), "venus");  // the file name wins over the schema
  }
  {
    JobTraceReader reader(errors);
    ASSERT_TRUE(reader.Open(WriteFile(dir, "trace_x.csv", std::string(kSerenHeader) + kSerenRow), "given").ok());
    EXPECT_EQ(reader.cluster(), "given");  // an explicit cluster wins over both
  }
  EXPECT_EQ(ClusterFromTraceFileName("data/job_trace/trace_seren.csv"), "seren");
  EXPECT_EQ(ClusterFromTraceFileName("trace_kalos.csv"), "kalos");
  EXPECT_EQ(ClusterFromTraceFileName("/a/b/jobs.csv"), "");
  EXPECT_EQ(ClusterFromTraceFileName("trace_seren.txt"), "");
}

TEST(JobTraceReaderTest, IgnoresUnknownColumnsAndFindsColumnsInAnyOrder) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "trace_seren.csv",
      "gpu_time,extra,queue,duration,end_time,start_time,submit_time,state,type,cpu_num,gpu_num,node_num,user,"
      "job_id,note\n"
      "936.0,zzz,32,117,2023-03-01 00:20:51+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:18:22+08:00,FAILED,"
      "Other,128,8,1,u5907,5778432,\"a, quoted note\"\n");
  core::InputErrors errors(nullptr);
  JobTraceReader reader(errors);
  const core::Status s = reader.Open(path);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);
  ExpectSerenExampleRow(rows[0]);
  EXPECT_EQ(errors.total(), 0);
}

TEST(JobTraceReaderTest, ReadsCrLfBomAndQuotedFields) {
  const std::string dir = TestDir();
  std::string header = kSerenHeader;
  header.insert(header.size() - 1, "\r");
  const std::string path = WriteFile(
      dir, "trace_seren.csv",
      "\xEF\xBB\xBF" + header +
          "\"5778432\",\"u5907\",1,8,128,\"Other\",FAILED,\"2023-03-01 00:18:22+08:00\",2023-03-01 00:18:54+08:00,"
          "2023-03-01 00:20:51+08:00,117,32,936.0");
  core::InputErrors errors(nullptr);
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);
  ExpectSerenExampleRow(rows[0]);
}

TEST(JobTraceReaderTest, MissingRequiredColumnIsAnErrorNamingIt) {
  const std::string dir = TestDir();
  std::string header = kSerenHeader;
  header.replace(header.find(",gpu_time"), 9, "");
  const std::string path = WriteFile(dir, "trace_seren.csv", header + "1,u,1,8,128,Other,FAILED,1,2,3,4,5\n");
  core::InputErrors errors(nullptr);
  JobTraceReader reader(errors);
  const core::Status s = reader.Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("gpu_time"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("queue"), std::string::npos) << s.message();  // only what is missing
}

TEST(JobTraceReaderTest, EmptyAndMissingFilesAreErrorsNamingThem) {
  const std::string dir = TestDir();
  core::InputErrors errors(nullptr);
  {
    const std::string path = WriteFile(dir, "trace_seren.csv", "");
    JobTraceReader reader(errors);
    const core::Status s = reader.Open(path);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
  {
    const std::string path = dir + "/trace_none.csv";
    JobTraceReader reader(errors);
    const core::Status s = reader.Open(path);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
}

TEST(JobTraceReaderTest, HeaderOnlyFileHasNoRows) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv", kSerenHeader);
  core::InputErrors errors(nullptr);
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  EXPECT_TRUE(ReadAll(reader).empty());
  EXPECT_EQ(errors.total(), 0);
}

// A file whose rows 3..8 are each malformed in one way, between good rows.
std::string MalformedTrace() {
  return std::string(kSerenHeader) +
         "1,u1,1,8,128,Other,COMPLETED,2023-03-01 00:00:00+08:00,2023-03-01 00:00:01+08:00,"
         "2023-03-01 00:01:01+08:00,60,1,480.0\n"  // line 2: good
         "2,u1,1,eight,128,Other,COMPLETED,2023-03-01 00:00:00+08:00,,,,,\n"  // line 3: bad gpu_num
         "3,u1,1,8,128,Other,COMPLETED,2023-03-01 00:00:00,,,,,\n"            // line 4: no offset
         "4,u1,1,8\n"                                                         // line 5: too few fields
         ",u1,1,8,128,Other,COMPLETED,2023-03-01 00:00:00+08:00,,,,,\n"       // line 6: empty job_id
         "\"6\",u1,1,8,128,\"multi\nline\",COMPLETED,2023-03-01 00:00:00+08:00,,,x,,\n"  // lines 7-8: bad duration
         "7,u1,1,8,128,Other,COMPLETED,2023-03-01 00:00:00+08:00,,,,1.5.1,\n"  // line 9: bad queue
         "8,u1,1,8,128,Other,COMPLETED,2023-03-01 00:00:02+08:00,2023-03-01 00:00:03+08:00,,,1,\n";  // 10: good
}

TEST(JobTraceReaderTest, ReportsEachMalformedRowOnceWithItsLineAndReadsTheRest) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv", MalformedTrace());
  Captured out;
  core::InputErrors errors(out.file());
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].job_id, "1");
  EXPECT_EQ(rows[1].job_id, "8");
  EXPECT_EQ(rows[1].start_ms, 1677600003000);
  EXPECT_FALSE(rows[1].end_ms.has_value());
  EXPECT_TRUE(std::isnan(rows[1].duration_s));  // empty published number: no value
  EXPECT_EQ(rows[1].queue_s, 1.0);
  EXPECT_EQ(errors.total(), 6);
  EXPECT_EQ(errors.counts().at({"seren", "job_trace"}), 6);
  EXPECT_EQ(out.messages(),
            path + ":3: gpu_num: not a non-negative integer: 'eight'\n" +
            path + ":4: submit_time: not a time with an offset: '2023-03-01 00:00:00'\n" +
            path + ":5: row: has 4 fields, expected at least 13\n" +
            path + ":6: job_id: empty\n" +
            path + ":7: duration: not a number: 'x'\n" +
            path + ":9: queue: not a number: '1.5.1'\n");
}

TEST(JobTraceReaderTest, ANameLongerThanANameMayBeIsAMalformedRow) {
  const std::string dir = TestDir();
  const std::string head =
      "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n";
  const std::string times = ",2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0\n";
  const std::string long_name(core::kMaxNameBytes + 1, 'x');
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     head + long_name + ",u1,1,8,128,Other,FAILED" + times +  // job_id
                                         "2," + long_name + ",1,8,128,Other,FAILED" + times +  // user
                                         "3,u1,1,8,128,Other,FAILED" + times);
  Captured out;
  core::InputErrors errors(out.file());
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].job_id, "3");
  EXPECT_EQ(errors.total(), 2);
  EXPECT_NE(out.messages().find(path + ":2: job_id: name of 257 bytes, more than 256: 'xxxx"), std::string::npos)
      << out.messages();
  EXPECT_NE(out.messages().find(path + ":3: user: name of 257 bytes, more than 256"), std::string::npos) << out.messages();
}

TEST(JobTraceReaderTest, ReportsBadTimesAndMissingSubmitOrState) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "trace_seren.csv",
      std::string(kSerenHeader) +
          "1,u,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,yesterday,,,,\n"           // 2: bad start
          "2,u,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,,2023-02-30 00:00:00+08:00,,,\n"  // 3: bad end
          "3,u,1,8,128,Other,FAILED,,,,,,\n"                                               // 4: no submit
          "4,u,1,8,128,Other,,2023-03-01 00:18:22+08:00,,,,,\n"                            // 5: no state
          "5,u,-1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,,,,,\n");                  // 6: negative
  Captured out;
  core::InputErrors errors(out.file());
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  EXPECT_TRUE(ReadAll(reader).empty());
  EXPECT_EQ(out.messages(), path + ":2: start_time: not a time with an offset: 'yesterday'\n" +
                            path + ":3: end_time: not a time with an offset: '2023-02-30 00:00:00+08:00'\n" +
                            path + ":4: submit_time: empty\n" +
                            path + ":5: state: empty\n" +
                            path + ":6: node_num: not a non-negative integer: '-1'\n");
}

TEST(JobTraceReaderTest, AcceptsWholeFloatCountsAndEmptyOptionalTimes) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "trace_kalos.csv",
      std::string(kKalosHeader) +
          "j1,u,1.0,8.0,16,1,1.0,Eval,CANCELLED,2023-05-17 11:00:58+00:00,,2023-05-17 11:02:00+00:00,,,62,,0.0\n");
  core::InputErrors errors(nullptr);
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].node_num, 1);
  EXPECT_EQ(rows[0].gpu_num, 8);
  EXPECT_FALSE(rows[0].start_ms.has_value());
  EXPECT_EQ(rows[0].end_ms, 1684321320000);
  EXPECT_TRUE(std::isnan(rows[0].queue_s));
  EXPECT_EQ(errors.total(), 0);
}

TEST(JobTraceReaderTest, StrictModeStopsAtTheFirstMalformedRow) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv", MalformedTrace());
  Captured out;
  core::InputErrors errors(out.file(), /*strict=*/true);
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);  // the good row before the first bad one; nothing after
  EXPECT_EQ(rows[0].job_id, "1");
  EXPECT_EQ(errors.total(), 1);
  EXPECT_TRUE(errors.must_stop());
  EXPECT_EQ(out.messages(), path + ":3: gpu_num: not a non-negative integer: 'eight'\n");
}

TEST(JobTraceReaderTest, ATimeOutsideTheTraceYearsIsABadRow) {
  // A job ending in year 9999 made process and run step through eight millennia of event time.
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) +
                                         "1,u,1,8,4,Other,COMPLETED,2023-03-01 00:00:00+08:00,2023-03-01 00:00:01+08:00,"
                                         "9999-03-01 00:00:00+08:00,1,1,8\n" +
                                         "2,u,1,8,4,Other,COMPLETED,1999-12-31 00:00:00+08:00,,,,,\n" + kSerenRow);
  Captured out;
  core::InputErrors errors(out.file());
  JobTraceReader reader(errors);
  ASSERT_TRUE(reader.Open(path).ok());
  const std::vector<JobRow> rows = ReadAll(reader);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(out.messages(), path + ":2: end_time: outside the accepted years 2000-2099: '9999-03-01 00:00:00+08:00'\n" +
                            path + ":3: submit_time: outside the accepted years 2000-2099: '1999-12-31 00:00:00+08:00'\n");
}

}  // namespace
}  // namespace acmetrace::producers

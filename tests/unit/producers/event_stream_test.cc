// EventStream: a whole data directory as one event-time-ordered stream; what a directory holds.
#include "acmetrace/producers/event_stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "acmetrace/core/record.h"
#include "test_files.h"

namespace acmetrace::producers {
namespace {

const std::string kRelease = std::string(ACMETRACE_FIXTURES) + "/release";

// "topic key ts_ms" (plus the event for jobs), in stream order.
std::vector<std::string> Describe(EventStream& stream) {
  std::vector<std::string> out;
  while (const core::Record* r = stream.Next()) {
    std::string line(core::TopicOf(*r));
    line += " ";
    core::AppendKey(line, *r);
    line += " " + std::to_string(core::TimestampMsOf(*r));
    if (const auto* e = std::get_if<core::JobEvent>(r)) line += " " + std::string(core::JobEventKindName(e->event));
    out.push_back(line);
  }
  return out;
}

std::unique_ptr<EventStream> OpenOrDie(const EventStreamOptions& options, core::InputErrors& errors) {
  core::Result<std::unique_ptr<EventStream>> stream = EventStream::Open(options, errors);
  EXPECT_TRUE(stream.ok()) << stream.status().message();
  if (!stream.ok()) return nullptr;
  return std::move(stream).value();
}

const std::vector<std::string> kFixtureStream = {
    "acme.util seren/10.140.1.10 1677601080000",
    "acme.util seren/10.140.1.11 1677601080000",
    "acme.power seren/GPU_A 1677601080000",
    "acme.power seren/GPU_B 1677601080000",
    "acme.util seren/10.140.1.10 1677601095000",
    "acme.util seren/10.140.1.11 1677601095000",
    "acme.jobs seren/5778432 1677601102000 submit",
    "acme.jobs seren/5778433 1677601110000 submit",  // ties: job events before utilization
    "acme.util seren/10.140.1.10 1677601110000",
    "acme.jobs seren/5778433 1677601111000 start",
    "acme.jobs seren/5778432 1677601134000 start",
    "acme.jobs seren/5778434 1677601140000 submit",
    "acme.jobs seren/5778434 1677601140000 start",
    "acme.power seren/CPU_D 1677601140000",  // ties: power after job events
    "acme.jobs seren/5778433 1677601171000 end",
    "acme.jobs seren/5778432 1677601251000 end",
    "acme.jobs seren/5778434 1677601740000 end",
    "acme.jobs kalos/dlctk696s0jbvitv 1684321258000 submit",
    "acme.util kalos/lingjun-pod9-0016 1684321260000",
    "acme.jobs kalos/dlctk696s0jbvitv 1684321268000 start",
    "acme.jobs kalos/dlctk696s0jbvitv 1684321276000 end",
};

TEST(EventStreamTest, MergesTheFixtureDirectoryInEventTimeOrder) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream), kFixtureStream);
  EXPECT_EQ(errors.total(), 0);
  EXPECT_TRUE(stream->status().ok());
  EXPECT_EQ(stream->out_of_order(), 0);
  EXPECT_GT(stream->bytes_total(), 0);
  EXPECT_EQ(stream->bytes_read(), stream->bytes_total());
}

TEST(EventStreamTest, IsCompleteAndNonDecreasing) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  std::map<std::string, int> per_topic;
  int64_t last = INT64_MIN;
  while (const core::Record* r = stream->Next()) {
    const int64_t ts = core::TimestampMsOf(*r);
    EXPECT_GE(ts, last);
    last = ts;
    ++per_topic[std::string(core::TopicOf(*r))];
  }
  EXPECT_EQ(per_topic, (std::map<std::string, int>{{"acme.jobs", 12}, {"acme.util", 6}, {"acme.power", 3}}));
  EXPECT_EQ(stream->Next(), nullptr);  // stays at the end
}

TEST(EventStreamTest, AcceptsTheDataDirectoryItself) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease + "/data";
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream), kFixtureStream);
}

TEST(EventStreamTest, FiltersClusters) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease;
  options.clusters = {"kalos"};
  auto kalos = OpenOrDie(options, errors);
  ASSERT_NE(kalos, nullptr);
  EXPECT_EQ(Describe(*kalos), (std::vector<std::string>(kFixtureStream.end() - 4, kFixtureStream.end())));

  options.clusters = {"seren"};
  auto seren = OpenOrDie(options, errors);
  ASSERT_NE(seren, nullptr);
  EXPECT_EQ(Describe(*seren), (std::vector<std::string>(kFixtureStream.begin(), kFixtureStream.end() - 4)));

  options.clusters = {"kalos", "seren"};
  auto both = OpenOrDie(options, errors);
  ASSERT_NE(both, nullptr);
  EXPECT_EQ(Describe(*both), kFixtureStream);
}

TEST(EventStreamTest, UnknownClusterIsAnError) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease;
  options.clusters = {"philly"};
  EXPECT_FALSE(EventStream::Open(options, errors).ok());
}

TEST(EventStreamTest, HonoursFromAndTo) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease;
  options.range.from_ms = 1677601110000;
  options.range.to_ms = 1677601140000;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream), (std::vector<std::string>(kFixtureStream.begin() + 7, kFixtureStream.begin() + 11)));
}

TEST(EventStreamTest, HonoursFromAlone) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease;
  options.range.from_ms = 1677601171000;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream), (std::vector<std::string>(kFixtureStream.begin() + 14, kFixtureStream.end())));
}

TEST(EventStreamTest, HonoursToAlone) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = kRelease;
  options.range.to_ms = 1677601095000;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream), (std::vector<std::string>(kFixtureStream.begin(), kFixtureStream.begin() + 4)));
}

TEST(EventStreamTest, MissingDirectoryIsAnErrorNamingIt) {
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = testing::TempDir() + "acmetrace_no_such_release";
  const auto stream = EventStream::Open(options, errors);
  ASSERT_FALSE(stream.ok());
  EXPECT_NE(stream.status().message().find(options.data_dir), std::string::npos) << stream.status().message();
}

TEST(EventStreamTest, DirectoryWithoutAcmeTraceFilesIsAnError) {
  const std::string dir = TestDir();
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = dir;
  {
    const auto stream = EventStream::Open(options, errors);  // empty directory
    ASSERT_FALSE(stream.ok());
    EXPECT_NE(stream.status().message().find(dir), std::string::npos) << stream.status().message();
  }
  WriteFile(dir, "data/job_trace/notes.csv", "a,b\n1,2\n");
  WriteFile(dir, "data/readme.txt", "hello\n");
  std::filesystem::create_directories(dir + "/data/utilization/seren");
  {
    const auto stream = EventStream::Open(options, errors);  // the layout, but no AcmeTrace files
    ASSERT_FALSE(stream.ok());
    EXPECT_NE(stream.status().message().find(dir), std::string::npos) << stream.status().message();
  }
  {
    const auto listed = ListDataDir(dir, {});
    EXPECT_FALSE(listed.ok());
  }
}

TEST(EventStreamTest, ListsTheFilesOfADataDirectory) {
  const auto listed = ListDataDir(kRelease, {});
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  const DataDirFiles& files = listed.value();
  EXPECT_EQ(std::filesystem::path(files.data_root), std::filesystem::path(kRelease) / "data");
  ASSERT_EQ(files.job_traces.size(), 2u);
  EXPECT_EQ(files.job_traces[0].first, "kalos");
  EXPECT_EQ(files.job_traces[1].first, "seren");
  EXPECT_EQ(std::filesystem::path(files.job_traces[1].second).filename(), "trace_seren.csv");
  ASSERT_EQ(files.utilization.size(), 2u);
  EXPECT_EQ(files.utilization[0].first, "kalos");
  EXPECT_EQ(files.utilization[0].second.size(), 2u);
  EXPECT_EQ(files.utilization[1].first, "seren");
  EXPECT_EQ(files.utilization[1].second.size(), 5u);
  EXPECT_EQ(files.ipmi.size(), 2u);

  const auto kalos = ListDataDir(kRelease, {"kalos"});
  ASSERT_TRUE(kalos.ok());
  ASSERT_EQ(kalos.value().job_traces.size(), 1u);
  EXPECT_EQ(kalos.value().job_traces[0].first, "kalos");
  ASSERT_EQ(kalos.value().utilization.size(), 1u);
  EXPECT_EQ(kalos.value().utilization[0].first, "kalos");
}

TEST(EventStreamTest, ADataSetASynthDidNotFinishIsRefused) {
  // synth killed mid-write left kalos's files cut and no faults.csv, and replay read it with 0 errors.
  const std::string dir = TestDir();
  WriteFile(dir, "data/job_trace/trace_seren.csv",
            "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
            "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
            "2023-03-01 00:20:51+08:00,117,32,936.0\n");
  ASSERT_TRUE(ListDataDir(dir, {}).ok());
  WriteFile(dir, std::string(kSynthIncompleteMarker), "");
  for (const std::string& given : {dir, dir + "/data", dir + "/data/"}) {
    const core::Result<DataDirFiles> listed = ListDataDir(given, {});
    ASSERT_FALSE(listed.ok()) << given;
    EXPECT_EQ(listed.status().message(), given + ": an acmetrace synth has not finished writing it (stopped or killed "
                                                 "mid-write: " + dir + "/" + std::string(kSynthIncompleteMarker) +
                                                 " is there); run synth again")
        << given;
  }
}

TEST(EventStreamTest, ReadsADirectoryWithOnlyAJobTrace) {
  const std::string dir = TestDir();
  WriteFile(dir, "data/job_trace/trace_seren.csv",
            "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
            "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
            "2023-03-01 00:20:51+08:00,117,32,936.0\n");
  WriteFile(dir, "data/utilization/util_pkl/GPU_UTIL.csv", "not,a,log\n");  // the release's CDFs: ignored
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = dir;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream), (std::vector<std::string>{"acme.jobs seren/5778432 1677601102000 submit",
                                                         "acme.jobs seren/5778432 1677601134000 start",
                                                         "acme.jobs seren/5778432 1677601251000 end"}));
  EXPECT_EQ(errors.total(), 0);
}

TEST(EventStreamTest, BreaksTiesJobsThenUtilizationThenPowerAndClustersInNameOrder) {
  const std::string dir = TestDir();
  // Every record at 2023-05-17 11:00:58Z = 1684321258 s, written in each cluster's own offset.
  const char* header =
      "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n";
  WriteFile(dir, "data/job_trace/trace_seren.csv",
            std::string(header) + "s1,u,1,8,128,Other,COMPLETED,2023-05-17 19:00:58+08:00,,,,,\n");
  WriteFile(dir, "data/job_trace/trace_kalos.csv",
            std::string(header) + "k1,u,1,8,128,Other,COMPLETED,2023-05-17 11:00:58+00:00,,,,,\n");
  WriteFile(dir, "data/utilization/seren/GPU_UTIL.csv", "Time,10.140.1.10-0\n1684321258,1\n");
  WriteFile(dir, "data/utilization/kalos/GPU_UTIL.csv", "Time,lingjun-pod9-0016-0\n1684321258,2\n");
  WriteFile(dir, "data/utilization/ipmi/CPU_D_Power.csv", "Time,Sys_Total_Power\n2023-05-17 19:00:58+08:00,546\n");
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = dir;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream), (std::vector<std::string>{"acme.jobs kalos/k1 1684321258000 submit",
                                                         "acme.jobs seren/s1 1684321258000 submit",
                                                         "acme.util kalos/lingjun-pod9-0016 1684321258000",
                                                         "acme.util seren/10.140.1.10 1684321258000",
                                                         "acme.power seren/CPU_D 1684321258000"}));
  EXPECT_EQ(errors.total(), 0);
}

TEST(EventStreamTest, JobTraceWithoutItsColumnsIsAnErrorNamingTheFile) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "data/job_trace/trace_seren.csv", "job_id,user\n1,u\n");
  core::InputErrors errors(nullptr);
  EventStreamOptions options;
  options.data_dir = dir;
  const auto stream = EventStream::Open(options, errors);
  ASSERT_FALSE(stream.ok());
  EXPECT_NE(stream.status().message().find("trace_seren.csv"), std::string::npos) << stream.status().message();
}

TEST(EventStreamTest, ADirectoryNamedLikeADataFileIsACountedErrorNamingIt) {
  // It was skipped silently: exit 0, no error, the cluster's jobs missing even with --strict.
  const std::string dir = TestDir();
  WriteFile(dir, "data/utilization/seren/GPU_UTIL.csv", "Time,10.140.1.10-0\n1677601080,5\n");
  std::filesystem::create_directories(dir + "/data/job_trace/trace_seren.csv");
  std::filesystem::create_directories(dir + "/data/utilization/seren/GPU_TEMP.csv");
  std::filesystem::create_directories(dir + "/data/utilization/ipmi/GPU_AB_Power.csv");
  Captured out;
  core::InputErrors errors(out.file());
  EventStreamOptions options;
  options.data_dir = dir;
  auto stream = OpenOrDie(options, errors);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(Describe(*stream).size(), 1u);  // the one good file is read
  EXPECT_EQ(errors.total(), 3);
  EXPECT_EQ(errors.counts().at({"seren", "job_trace"}), 1);
  EXPECT_EQ(errors.counts().at({"seren", "utilization"}), 1);
  EXPECT_EQ(errors.counts().at({"seren", "ipmi"}), 1);
  const std::string text = out.text();
  EXPECT_NE(text.find(dir + "/data/job_trace/trace_seren.csv: is a directory, not a file; skipped\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(dir + "/data/utilization/seren/GPU_TEMP.csv: is a directory, not a file; skipped\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace acmetrace::producers

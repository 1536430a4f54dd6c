// JobEventSource: rows in submit order become submit/start/end events in event-time order.
#include "acmetrace/producers/job_event_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "acmetrace/core/record_json.h"
#include "test_files.h"

namespace acmetrace::producers {
namespace {

constexpr char kSerenHeader[] =
    "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n";
constexpr char kSerenRow[] =
    "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
    "2023-03-01 00:20:51+08:00,117,32,936.0\n";
constexpr int64_t kT0 = 1677600000000;  // 2023-03-01 00:00:00+08:00

// "2023-03-01 00:MM:SS+08:00" for a second offset from kT0 (under an hour).
std::string At(int seconds) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "2023-03-01 00:%02d:%02d+08:00", seconds / 60, seconds % 60);
  return buf;
}

// A Seren row; start/end < 0 = empty.
std::string Row(const std::string& id, int submit, int start, int end, const std::string& state = "COMPLETED") {
  return id + ",u1,1,8,128,Eval," + state + "," + At(submit) + "," + (start >= 0 ? At(start) : "") + "," +
         (end >= 0 ? At(end) : "") + ",10,5,80.0\n";
}

// "event job_id seconds-after-kT0" per event, in the order emitted.
std::vector<std::string> Events(JobEventSource& source) {
  std::vector<std::string> out;
  while (const core::Record* r = source.Next()) {
    const auto& e = std::get<core::JobEvent>(*r);
    out.push_back(std::string(core::JobEventKindName(e.event)) + " " + e.job_id + " " +
                  std::to_string((e.ts_ms - kT0) / 1000));
  }
  return out;
}

std::vector<std::string> ReadEvents(const std::string& path, TimeRange range = {}, int64_t window_ms = 60'000) {
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, range, window_ms);
  const core::Status s = source.Open(path);
  EXPECT_TRUE(s.ok()) << s.message();
  return Events(source);
}

const std::string kFixture = std::string(ACMETRACE_FIXTURES) + "/release/data/job_trace/trace_seren.csv";

const std::vector<std::string> kFixtureEvents = {
    "submit 5778432 1102", "submit 5778433 1110", "start 5778433 1111", "start 5778432 1134",
    "submit 5778434 1140", "start 5778434 1140",  "end 5778433 1171",   "end 5778432 1251",
    "end 5778434 1740"};

TEST(JobEventSourceTest, EmitsEventsInTimeOrderAcrossJobs) {
  EXPECT_EQ(ReadEvents(kFixture, {}, 60'000), kFixtureEvents);
  EXPECT_EQ(ReadEvents(kFixture, {}, 0), kFixtureEvents);  // the window changes latency, not order
}

TEST(JobEventSourceTest, WritesTheDesignsJsonForTheRealSerenRow) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv", std::string(kSerenHeader) + kSerenRow);
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  ASSERT_TRUE(source.Open(path).ok());
  EXPECT_EQ(source.cluster(), "seren");
  std::vector<std::string> lines;
  while (const core::Record* r = source.Next()) {
    std::string line;
    core::AppendFramedLine(line, *r);
    lines.push_back(line);
  }
  const std::string fields =
      R"("job_id":"5778432","user":"u5907","type":"Other","node_num":1,"gpu_num":8,"cpu_num":128)";
  const std::string frame = R"({"topic":"acme.jobs","key":"seren/5778432","value":{"v":1,"cluster":"seren",)";
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], frame + R"("event":"submit","ts_ms":1677601102000,)" + fields + "}}\n");
  EXPECT_EQ(lines[1], frame + R"("event":"start","ts_ms":1677601134000,)" + fields + R"(,"queue_s":32}})" + "\n");
  EXPECT_EQ(lines[2], frame + R"("event":"end","ts_ms":1677601251000,)" + fields +
                          R"(,"state":"FAILED","duration_s":117,"queue_s":32,"gpu_time":936}})" + "\n");
}

TEST(JobEventSourceTest, RepeatsStaticFieldsAndCarriesPublishedNumbers) {
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  ASSERT_TRUE(source.Open(kFixture).ok());
  while (const core::Record* r = source.Next()) {
    const auto& e = std::get<core::JobEvent>(*r);
    if (e.job_id != "5778434") continue;
    EXPECT_EQ(e.cluster, "seren");
    EXPECT_EQ(e.user, "u1234");
    EXPECT_EQ(e.type, "Pretrain");
    EXPECT_EQ(e.node_num, 2);
    EXPECT_EQ(e.gpu_num, 16);
    EXPECT_EQ(e.cpu_num, 256);
    if (e.event == core::JobEventKind::kSubmit) {
      EXPECT_FALSE(core::IsSample(e.queue_s));
      EXPECT_TRUE(e.state.empty());
    }
    if (e.event == core::JobEventKind::kStart) {
      EXPECT_EQ(e.queue_s, 0.0);
      EXPECT_FALSE(core::IsSample(e.duration_s));
      EXPECT_TRUE(e.state.empty());
    }
    if (e.event == core::JobEventKind::kEnd) {
      EXPECT_EQ(e.state, "CANCELLED");
      EXPECT_EQ(e.duration_s, 600.0);
      EXPECT_EQ(e.queue_s, 0.0);
      EXPECT_EQ(e.gpu_time, 9600.0);
    }
  }
}

TEST(JobEventSourceTest, JobWithoutStartTimeHasNoStartEvent) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + Row("a", 10, -1, 70, "CANCELLED") +
                                         Row("b", 20, 30, 40) + Row("c", 25, -1, -1, "PENDING"));
  EXPECT_EQ(ReadEvents(path), (std::vector<std::string>{"submit a 10", "submit b 20", "submit c 25", "start b 30",
                                                         "end b 40", "end a 70"}));
}

TEST(JobEventSourceTest, EqualTimesKeepLifecycleOrderWithinAJobAndSubmitOrderBetweenJobs) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + Row("a", 10, 10, 10) +  // all three at once
                                         Row("b", 5 + 5, 20, 30) +                       // submit ties a's
                                         Row("c", 20, 20, 30));                          // ties b's start and end
  for (int64_t window : {int64_t{0}, int64_t{60'000}}) {
    EXPECT_EQ(ReadEvents(path, {}, window),
              (std::vector<std::string>{"submit a 10", "start a 10", "end a 10", "submit b 10", "start b 20",
                                        "submit c 20", "start c 20", "end b 30", "end c 30"}))
        << "window " << window;
  }
}

TEST(JobEventSourceTest, KeepsLifecycleOrderWhenManyJobsShareOneTime) {
  // Many jobs with every event at one time: each job's events in lifecycle order, jobs in row order.
  const std::string dir = TestDir();
  std::string content = kSerenHeader;
  for (int i = 0; i < 20; ++i) content += Row("j" + std::to_string(i), 100, 100, 100);
  const std::string path = WriteFile(dir, "trace_seren.csv", content);
  std::vector<std::string> expected;
  for (int i = 0; i < 20; ++i) {
    for (const char* kind : {"submit", "start", "end"}) {
      expected.push_back(std::string(kind) + " j" + std::to_string(i) + " 100");
    }
  }
  EXPECT_EQ(ReadEvents(path), expected);
}

TEST(JobEventSourceTest, SortsRowsSlightlyOutOfSubmitOrder) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "trace_seren.csv",
      std::string(kSerenHeader) + Row("a", 100, 300, 400) + Row("b", 90, 95, 200) + Row("c", 130, 140, 150));
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  ASSERT_TRUE(source.Open(path).ok());
  EXPECT_EQ(Events(source), (std::vector<std::string>{"submit b 90", "start b 95", "submit a 100", "submit c 130",
                                                      "start c 140", "end c 150", "end b 200", "start a 300",
                                                      "end a 400"}));
  EXPECT_EQ(source.out_of_order(), 0);
}

TEST(JobEventSourceTest, EmitsRowsFarOutOfOrderAtOnceAndCountsThem) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + Row("a", 100, 110, 120) + Row("b", 1000, 1010, 1020) +
                                         Row("c", 105, 106, 107) + Row("d", 1100, 1110, 1120));
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  ASSERT_TRUE(source.Open(path).ok());
  const std::vector<std::string> events = Events(source);
  EXPECT_EQ(events.size(), 12u);  // nothing is lost
  EXPECT_EQ(source.out_of_order(), 3);  // c's events, behind a's end (already sent) by up to 15 s
  EXPECT_EQ(std::count(events.begin(), events.end(), "submit c 105"), 1);
}

TEST(JobEventSourceTest, HonoursTheHalfOpenRange) {
  const int64_t base = kT0 + 1000 * 1000;  // 1000 s after kT0 (fixture times are 11xx s)
  TimeRange range;
  range.from_ms = base + 134'000;
  range.to_ms = base + 251'000;
  EXPECT_EQ(ReadEvents(kFixture, range),
            (std::vector<std::string>{"start 5778432 1134", "submit 5778434 1140", "start 5778434 1140",
                                      "end 5778433 1171"}));
}

TEST(JobEventSourceTest, FromWithoutToSkipsJobsThatEndedBefore) {
  // A whole job before --from, and no --to: later jobs must still come.
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + Row("early", 10, 20, 30) + Row("mid", 40, 45, 200) +
                                         Row("late", 300, 310, 320));
  TimeRange range;
  range.from_ms = kT0 + 100'000;
  for (int64_t window : {int64_t{0}, int64_t{60'000}}) {
    EXPECT_EQ(ReadEvents(path, range, window),
              (std::vector<std::string>{"end mid 200", "submit late 300", "start late 310", "end late 320"}))
        << "window " << window;
  }
}

TEST(JobEventSourceTest, ToWithoutFromStopsBeforeTo) {
  const std::string dir = TestDir();
  std::string content = kSerenHeader;
  for (int i = 0; i < 30; ++i) content += Row("j" + std::to_string(i), i * 100, i * 100 + 10, i * 100 + 20);
  const std::string path = WriteFile(dir, "trace_seren.csv", content);
  TimeRange range;
  range.to_ms = kT0 + 210'000;
  for (int64_t window : {int64_t{0}, int64_t{60'000}}) {
    EXPECT_EQ(ReadEvents(path, range, window),
              (std::vector<std::string>{"submit j0 0", "start j0 10", "end j0 20", "submit j1 100", "start j1 110",
                                        "end j1 120", "submit j2 200"}))
        << "window " << window;
  }
}

TEST(JobEventSourceTest, SkipsMalformedRowsAndKeepsGoing) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "trace_seren.csv",
                                     std::string(kSerenHeader) + Row("a", 10, 20, 30) +
                                         "b,u1,1,x,128,Eval,COMPLETED," + At(15) + ",,,,,\n" + Row("c", 40, 50, 60));
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  ASSERT_TRUE(source.Open(path).ok());
  EXPECT_EQ(Events(source), (std::vector<std::string>{"submit a 10", "start a 20", "end a 30", "submit c 40",
                                                      "start c 50", "end c 60"}));
  EXPECT_EQ(errors.total(), 1);
}

TEST(JobEventSourceTest, UsesTheGivenClusterAndReportsSizes) {
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  ASSERT_TRUE(source.Open(kFixture, "other").ok());
  EXPECT_EQ(source.cluster(), "other");
  EXPECT_EQ(source.bytes_total(), static_cast<int64_t>(std::filesystem::file_size(kFixture)));
  int n = 0;
  while (const core::Record* r = source.Next()) {
    EXPECT_EQ(std::get<core::JobEvent>(*r).cluster, "other");
    ++n;
  }
  EXPECT_EQ(n, 9);
  EXPECT_EQ(source.bytes_read(), source.bytes_total());
  EXPECT_TRUE(source.status().ok());
}

TEST(JobEventSourceTest, MissingFileIsAnError) {
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  const std::string path = testing::TempDir() + "acmetrace_missing/trace_seren.csv";
  const core::Status s = source.Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos);
}

TEST(JobEventSourceTest, ManyOverlappingJobsComeOutSorted) {
  const std::string dir = TestDir();
  std::string content = kSerenHeader;
  for (int i = 0; i < 300; ++i) {
    const int submit = i * 10;
    content += Row("j" + std::to_string(i), submit, submit + (i * 7) % 50, submit + 50 + (i * 13) % 400);
  }
  const std::string path = WriteFile(dir, "trace_seren.csv", content);
  core::InputErrors errors(nullptr);
  JobEventSource source(errors, {}, 60'000);
  ASSERT_TRUE(source.Open(path).ok());
  int64_t last = INT64_MIN;
  int n = 0;
  while (const core::Record* r = source.Next()) {
    const int64_t ts = core::TimestampMsOf(*r);
    ASSERT_GE(ts, last) << "record " << n;
    last = ts;
    ++n;
  }
  EXPECT_EQ(n, 900);
  EXPECT_EQ(source.out_of_order(), 0);
}

}  // namespace
}  // namespace acmetrace::producers

// The in-process run over the fixture release, and the export stage over stdin.
#include "acmetrace/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <mutex>

#include "acmetrace/pipeline/config_keys.h"
#include "acmetrace/processors/detector.h"
#include "test_files.h"

namespace acmetrace::pipeline {
namespace {

const std::string kFixture = std::string(ACMETRACE_FIXTURES) + "/release";

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

// The in-process transport from the registry, with queues of capacity records.
std::unique_ptr<Transport> Queues(int capacity) {
  core::Config config;
  DeclareAllConfig(config);
  EXPECT_TRUE(config.Set("run.queue_capacity", std::to_string(capacity)).ok());
  core::Result<std::unique_ptr<Transport>> made = FindTransport("in-process")->make(config, stderr);
  EXPECT_TRUE(made.ok());
  return std::move(made).value();
}

core::Status ExportFromStdio(std::FILE* in, exporters::Exporter& exporter, core::InputErrors& errors,
                             const std::atomic<bool>& stop) {
  core::StdioInput input(in, "stdin");
  return RunExportStage(input, exporter, errors, StageOptions{}, stop);
}

TEST(PipelineTest, ReplaysProcessesAndExportsTheFixtureRelease) {
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  PipelineOptions options;
  options.stream.data_dir = kFixture;
  options.replay.speed = 0;  // max
  std::unique_ptr<Transport> queues = Queues(8);  // small: backpressure is exercised
  Pipeline run(options, *queues, exporter, errors);
  ASSERT_TRUE(run.Run().ok());
  const std::string text = exporter.Exposition();
  // trace_seren.csv: 3 jobs (Other, FAILED gpu 936 GPU-s; Other COMPLETED cpu; ...); kalos 1.
  EXPECT_NE(text.find("acmetrace_jobs_submitted_total{cluster=\"seren\""), std::string::npos) << text;
  EXPECT_TRUE(Has(text, "acmetrace_job_gpu_seconds_total{cluster=\"seren\",type=\"Other\",state=\"FAILED\"} 936"))
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_records_total{stage=\"replay\",topic=\"acme.jobs\"}"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_records_total{stage=\"process\",topic=\"acme.metrics\"}"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_records_total{stage=\"export\",topic=\"acme.util\"}"), std::string::npos);
  EXPECT_GT(run.process_stats().windows, 0);
  EXPECT_EQ(errors.total(), 0);
}

// What the replay asks of its sink reaches the sink behind the tee that counts for /metrics (`acmetrace
// run`): a Kafka sink's start round (Prepare) and its send before each wait (Send) were once the
// default no-ops of the tee, so `run --transport kafka` skipped them.
class CallLog : public core::RecordSink {
 public:
  core::Status Write(const core::Record&) override { return Log("write"); }
  core::Status Flush() override { return Log("flush"); }
  core::Status Send() override { return Log("send"); }
  core::Status Prepare(int64_t first_trace_ts_ms) override { return Log("prepare " + std::to_string(first_trace_ts_ms)); }
  core::Status End(const std::vector<std::string>& clusters) override {
    return Log("end " + (clusters.empty() ? std::string() : clusters.front()));
  }
  std::vector<std::string> calls;

 private:
  core::Status Log(std::string call) {
    calls.push_back(std::move(call));
    return core::Status::Ok();
  }
};

TEST(CountingTeeTest, ForwardsEveryCallOfAPacedWriter) {
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  CallLog out;
  CountingTee tee("replay", exporter, /*note_trace_time=*/true, out);
  core::JobEvent job;
  job.cluster = "seren";
  job.ts_ms = 1'688'140'800'000;
  ASSERT_TRUE(tee.Prepare(job.ts_ms).ok());
  ASSERT_TRUE(tee.Write(job).ok());
  ASSERT_TRUE(tee.Send().ok());
  ASSERT_TRUE(tee.Flush().ok());
  ASSERT_TRUE(tee.End({"seren"}).ok());
  EXPECT_EQ(out.calls, (std::vector<std::string>{"prepare 1688140800000", "write", "send", "flush", "end seren"}));
}

TEST(PipelineTest, AMissingDataDirectoryIsAnError) {
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  PipelineOptions options;
  options.stream.data_dir = "/nonexistent/acmetrace";
  std::unique_ptr<Transport> queues = Queues(8);
  Pipeline run(options, *queues, exporter, errors);
  EXPECT_FALSE(run.Run().ok());
}

TEST(PipelineTest, StopBeforeRunEndsAtOnce) {
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  PipelineOptions options;
  options.stream.data_dir = kFixture;
  options.replay.speed = 0.001;  // would take years
  std::unique_ptr<Transport> queues = Queues(8);
  Pipeline run(options, *queues, exporter, errors);
  run.Stop();
  EXPECT_TRUE(run.Run().ok());
}

TEST(ExportStageTest, MalformedLinesAreReportedWithTheirLineAndCounted) {
  const std::string input =
      "{\"topic\":\"acme.anomalies\",\"key\":\"seren/gpu_overheat/n1-3\",\"value\":{\"v\":1,\"cluster\":\"seren\","
      "\"kind\":\"gpu_overheat\",\"subject\":\"n1-3\",\"state\":\"open\",\"ts_ms\":1677601021000,\"value\":88,"
      "\"threshold\":85}}\n"
      "not json at all\n"
      "{\"topic\":\"acme.metrics\",\"key\":\"seren\",\"value\":{\"v\":1,\"cluster\":\"seren\",\"window_s\":60,"
      "\"start_ms\":1677601020000,\"end_ms\":1677601080000,\"metrics\":{\"gpus_total\":2288}}}\n";
  std::FILE* in = fmemopen(const_cast<char*>(input.data()), input.size(), "r");
  ASSERT_NE(in, nullptr);
  char* report = nullptr;
  size_t report_size = 0;
  std::FILE* err = open_memstream(&report, &report_size);
  core::InputErrors errors(err);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  std::atomic<bool> stop{false};
  EXPECT_TRUE(ExportFromStdio(in, exporter, errors, stop).ok());
  std::fclose(in);
  std::fclose(err);
  const std::string stderr_text(report, report_size);
  std::free(report);
  EXPECT_NE(stderr_text.find("stdin:2:"), std::string::npos) << stderr_text;
  EXPECT_EQ(errors.total(), 1);
  const std::string text = exporter.Exposition();
  EXPECT_NE(text.find("acmetrace_anomaly_active{cluster=\"seren\",kind=\"gpu_overheat\",subject=\"n1-3\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("acmetrace_gpus_capacity{cluster=\"seren\"} 2288"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_input_errors_total{cluster=\"\",kind=\"record\"} 1"), std::string::npos);
}

TEST(StopLatchTest, WaitReturnsOnceTriggered) {
  StopLatch latch;
  EXPECT_FALSE(latch.WaitFor(0));
  latch.Trigger();
  EXPECT_TRUE(latch.WaitFor(1'000'000));  // returns at once: no wall-time wait
}

}  // namespace
}  // namespace acmetrace::pipeline

namespace acmetrace::pipeline {
namespace {

TEST(ExportStageTest, AnOverlongLineIsReportedAndSkippedWithBoundedMemory) {
  std::string input(65u << 20, 'x');  // one line longer than 64 MiB
  input += "\n{\"topic\":\"acme.metrics\",\"key\":\"seren\",\"value\":{\"v\":1,\"cluster\":\"seren\",\"window_s\":60,"
           "\"start_ms\":1677601020000,\"end_ms\":1677601080000,\"metrics\":{\"gpus_total\":2288}}}\n";
  std::FILE* in = fmemopen(input.data(), input.size(), "r");
  ASSERT_NE(in, nullptr);
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  std::atomic<bool> stop{false};
  EXPECT_TRUE(ExportFromStdio(in, exporter, errors, stop).ok());
  std::fclose(in);
  EXPECT_EQ(errors.total(), 1);
  EXPECT_NE(errors.first().find("stdin:1:"), std::string::npos) << errors.first();
  EXPECT_NE(errors.first().find("line longer than 64 MiB: skipped"), std::string::npos) << errors.first();
  EXPECT_NE(exporter.Exposition().find("acmetrace_gpus_capacity{cluster=\"seren\"} 2288"), std::string::npos);
}

}  // namespace
}  // namespace acmetrace::pipeline

namespace acmetrace::pipeline {
namespace {

TEST(DefaultDataTest, IsSynthesizedOnceAndAgainWhenAnOlderSynthMadeIt) {
  const ScratchDir cache("acmetrace_default_data", "cache");
  core::Config config;
  DeclareRunConfig(config);
  ASSERT_TRUE(config.Set("run.cache_dir", cache.str()).ok());
  ASSERT_TRUE(config.Set("run.default_scale", "0.01").ok());
  std::vector<std::string> said;
  auto log = [&said](const std::string& line) { said.push_back(line); };
  core::Result<std::string> first = PrepareDefaultData(config, log);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(said.size(), 1u);  // "synthesizing the default data set ..."
  EXPECT_TRUE(std::filesystem::exists(first.value() + "/faults.csv"));

  // Kept: the next run uses it as it is.
  const std::string sentinel = first.value() + "/kept";
  std::ofstream(sentinel) << "x";
  core::Result<std::string> again = PrepareDefaultData(config, log);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), first.value());
  EXPECT_EQ(said.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(sentinel));

  // Made by an older synth (its marker, as builds before the generation was written left it): the
  // same seed now gives other incidents, so it is made again.
  std::ofstream(first.value() + "/.complete") << "synthesized by acmetrace run\n";
  core::Result<std::string> remade = PrepareDefaultData(config, log);
  ASSERT_TRUE(remade.ok());
  EXPECT_EQ(remade.value(), first.value());
  EXPECT_EQ(said.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(sentinel));
}

TEST(DefaultDataTest, TwoRunsStartedTogetherShareOneSynthesisAndNeitherLosesItsData) {
  // The second run removed the directory under the first, which exited 0 after half the records.
  const ScratchDir cache("acmetrace_default_data_twice", "cache");
  core::Config config;
  DeclareRunConfig(config);
  ASSERT_TRUE(config.Set("run.cache_dir", cache.str()).ok());
  ASSERT_TRUE(config.Set("run.default_scale", "0.01").ok());
  // What an interrupted attempt left aside goes.
  const std::string leftover = cache.str() + "/default-d1-s0.01-faults.partial-999999";
  std::filesystem::create_directories(leftover + "/data");
  std::mutex said_mutex;
  std::vector<std::string> said;
  auto log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(said_mutex);
    said.push_back(line);
  };
  core::Result<std::string> a = core::Status::Error("not run"), b = core::Status::Error("not run");
  std::thread first([&] { a = PrepareDefaultData(config, log); });
  std::thread second([&] { b = PrepareDefaultData(config, log); });
  first.join();
  second.join();
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a.value(), b.value());
  size_t synthesized = 0;
  for (const std::string& line : said) synthesized += line.rfind("synthesizing", 0) == 0;
  EXPECT_EQ(synthesized, 1u) << "one synthesis, the other waited for it";
  EXPECT_TRUE(std::filesystem::exists(a.value() + "/faults.csv"));
  EXPECT_TRUE(std::filesystem::exists(a.value() + "/.complete"));
  for (const auto& entry : std::filesystem::directory_iterator(cache.str())) {
    EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace acmetrace::pipeline

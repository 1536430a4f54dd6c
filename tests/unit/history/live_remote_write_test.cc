// run/export --remote-write as a receiver sees it: every target of the exporter scraped as the
// shipped prometheus.yml scrapes it, each sample at the scrape's wall time, a last scrape at the
// end, and the queue's own metrics on the exporter's /metrics while it lives. A scripted receiver
// and a fixed clock: nothing sleeps (the scrapes are taken by hand, not by the thread).
#include "acmetrace/history/live_remote_write.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/record.h"
#include "acmetrace/remote_write/queue_metrics.h"

namespace acmetrace::history {
namespace {

// Every series accepted: its text -> (ts, value) in order.
struct Receiver {
  std::mutex mu;
  std::map<std::string, std::vector<remote_write::Sample>> stored;
};

class StoringTransport : public remote_write::WriteTransport {
 public:
  explicit StoringTransport(Receiver& receiver) : receiver_(receiver) {}
  core::Result<remote_write::HttpAnswer> Post(const std::string& body) override {
    core::Result<std::vector<remote_write::TimeSeries>> decoded = remote_write::DecodeWriteRequest(body);
    EXPECT_TRUE(decoded.ok());
    std::lock_guard<std::mutex> lock(receiver_.mu);
    for (const remote_write::TimeSeries& s : decoded.value()) {
      auto& into = receiver_.stored[remote_write::SeriesText(s.labels)];
      into.insert(into.end(), s.samples.begin(), s.samples.end());
    }
    return remote_write::HttpAnswer{204, "", -1};
  }

 private:
  Receiver& receiver_;
};

class NoSleep : public remote_write::Sleeper {
 public:
  void SleepMs(int64_t) override {}
};

core::UtilSample Util(const std::string& node, int64_t ts_ms) {
  core::UtilSample s;
  s.cluster = "seren";
  s.node = node;
  s.ts_ms = ts_ms;
  s.gpu.push_back(core::GpuMetric{core::InternName("GPU_UTIL"), {30, 70}});
  s.gpu.push_back(core::GpuMetric{core::InternName("GPU_TEMP"), {40, 41}});
  return s;
}

TEST(LiveRemoteWriteTest, EveryTargetAtTheScrapesWallTimeAndALastScrapeAtTheEnd) {
  core::ManualClock wall(0);
  exporters::Exporter exporter(exporters::ExportOptions{}, nullptr, &wall);
  exporter.Apply(Util("n1", 1'688'140'800'000));
  Receiver receiver;
  NoSleep sleeper;
  remote_write::QueueOptions queue_options;
  auto queue = std::make_unique<remote_write::WriteQueue>(
      queue_options, [&receiver] { return std::make_unique<StoringTransport>(receiver); }, sleeper);
  LiveRemoteWriteOptions options;
  options.targets.instance = "127.0.0.1:9555";
  options.url = "http://rw/api/v1/write";
  int64_t now_ms = 1'796'000'000'000;
  {
    LiveRemoteWrite live(exporter, std::move(queue), options, [&now_ms] { return now_ms; });
    // While it lives, /metrics serves the queue's metrics with the rest.
    EXPECT_NE(exporter.ScrapeExposition().find("acmetrace_remote_storage_shards{url=\"http://rw/api/v1/write\"} 4\n"),
              std::string::npos);
    ASSERT_TRUE(live.ScrapeNow().ok());
    now_ms += 250;
    exporter.Apply(Util("n2", 1'688'140'815'000));  // a node that appears later
    ASSERT_TRUE(live.Finish().ok());                // the last scrape, then everything sent
    EXPECT_EQ(live.scrapes(), 2);
    EXPECT_EQ(live.Stats().samples_pending, 0);
    EXPECT_EQ(live.Stats().samples_failed, 0);
    EXPECT_GT(live.series(), 10);
  }
  EXPECT_EQ(exporter.ScrapeExposition().find("acmetrace_remote_storage_"), std::string::npos);

  const auto& stored = receiver.stored;
  auto at = [&](const std::string& series) {
    std::vector<int64_t> times;
    if (auto it = stored.find(series); it != stored.end()) {
      for (const remote_write::Sample& s : it->second) times.push_back(s.ts_ms);
    }
    return times;
  };
  // The exporter's own target, both scrapes, at wall time.
  EXPECT_EQ(at("up{instance=\"127.0.0.1:9555\",job=\"acmetrace\"}"),
            (std::vector<int64_t>{1'796'000'000'000, 1'796'000'000'250}));
  // One target per node, from the scrape that first saw it.
  EXPECT_EQ(at("up{cluster=\"seren\",instance=\"n1\",job=\"acmetrace-gpu-nodes\"}").size(), 2u);
  EXPECT_EQ(at("up{cluster=\"seren\",instance=\"n2\",job=\"acmetrace-gpu-nodes\"}"),
            (std::vector<int64_t>{1'796'000'000'250}));
  // The persona under its node's target, the process and the queue under the exporter's.
  int persona = 0, process = 0, queue_metrics = 0;
  for (const auto& [series, samples] : stored) {
    if (series.rfind("DCGM_FI_DEV_GPU_TEMP{", 0) == 0) {
      ++persona;
      EXPECT_NE(series.find("job=\"acmetrace-gpu-nodes\""), std::string::npos) << series;
    }
    if (series.rfind("process_", 0) == 0 || series.rfind("acmetrace_remote_storage_", 0) == 0) {
      (series[0] == 'p' ? process : queue_metrics) += 1;
      EXPECT_NE(series.find("instance=\"127.0.0.1:9555\",job=\"acmetrace\""), std::string::npos) << series;
    }
    for (const remote_write::Sample& s : samples) {
      EXPECT_TRUE(s.ts_ms == 1'796'000'000'000 || s.ts_ms == 1'796'000'000'250) << series;
    }
  }
  EXPECT_EQ(persona, 4);  // two GPUs on each node
  EXPECT_GT(process, 0);
  EXPECT_EQ(queue_metrics, 9);
}

}  // namespace
}  // namespace acmetrace::history

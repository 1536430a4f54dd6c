// The scrape text back to labels and values for remote write: what the blocks path stores, the
// receiver gets (same labels, same values, the scrape's time).
#include "acmetrace/history/remote_write_output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "acmetrace/exporters/series_store.h"
#include "acmetrace/history/openmetrics.h"
#include "acmetrace/remote_write/queue_metrics.h"

namespace acmetrace::history {
namespace {

TEST(ParseOpenMetricsSampleTest, ReadsBackWhatTheScraperWrites) {
  const std::string hostile = "a\"b\\c\nd},{=é";
  std::string labels = "{user=\"";
  exporters::AppendEscaped(labels, hostile, true);
  labels += "\",Zone=\"z\"}";
  std::string text;
  AppendOpenMetricsSample(text, "acme_job_gpus", labels, RenderTargetLabels("acmetrace", "127.0.0.1:9400"), 8.5,
                          1'688'169'615'250);
  ASSERT_EQ(text.back(), '\n');
  text.pop_back();
  ParsedSample s;
  ASSERT_TRUE(ParseOpenMetricsSample(text, s).ok()) << text;
  EXPECT_EQ(s.value, 8.5);
  const std::vector<remote_write::Label> want = {{"Zone", "z"},
                                                 {"__name__", "acme_job_gpus"},
                                                 {"instance", "127.0.0.1:9400"},
                                                 {"job", "acmetrace"},
                                                 {"user", hostile}};
  EXPECT_EQ(s.labels, want);  // sorted by name, as Prometheus orders a series's labels
  EXPECT_EQ(s.series, text.substr(0, text.find("} ") + 1));
  EXPECT_EQ(SeriesTextEnd(text), s.series.size());  // the fast path of a known series finds the same text
}

TEST(ParseOpenMetricsSampleTest, SpecialValuesAndNoLabels) {
  ParsedSample s;
  ASSERT_TRUE(ParseOpenMetricsSample("up 1 1688169615", s).ok());
  EXPECT_EQ(s.labels, (std::vector<remote_write::Label>{{"__name__", "up"}}));
  ASSERT_TRUE(ParseOpenMetricsSample("m{} NaN 1", s).ok());
  EXPECT_TRUE(std::isnan(s.value));
  ASSERT_TRUE(ParseOpenMetricsSample("m +Inf", s).ok());
  EXPECT_EQ(s.value, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(ParseOpenMetricsSample("m -Inf", s).ok());
  EXPECT_EQ(s.value, -std::numeric_limits<double>::infinity());
  ASSERT_TRUE(ParseOpenMetricsSample("m -1.5e-3", s).ok());
  EXPECT_EQ(s.value, -1.5e-3);
}

TEST(ParseOpenMetricsSampleTest, BrokenLinesAreErrorsNotCrashes) {
  ParsedSample s;
  for (const char* bad : {"", " 1", "m", "m ", "m{", "m{a} 1", "m{a=b} 1", "m{a=\"x} 1", "m{a=\"x\\", "m{=\"x\"} 1",
                          "m{a=\"x\"", "m{a=\"x\"} ", "m{a=\"x\"} 1x", "m{a=\"x\"}1",
                          // names Prometheus would not take; a quote in a label name made SeriesTextEnd, which
                          // reads quotes as the values' bounds, end the series elsewhere (remote_write_fuzz)
                          "m{j\"a=\"x\"} 1", "m{1a=\"x\"} 1", "m-x 1", "1m 1"}) {
    EXPECT_FALSE(ParseOpenMetricsSample(bad, s).ok()) << bad;
  }
}

// Every series a receiver holds: its text -> (ts, value) in arrival order.
using Stored = std::map<std::string, std::vector<std::pair<int64_t, double>>>;

class StoringTransport : public remote_write::WriteTransport {
 public:
  StoringTransport(std::mutex& mu, Stored& stored) : mu_(mu), stored_(stored) {}
  core::Result<remote_write::HttpAnswer> Post(const std::string& body) override {
    core::Result<std::vector<remote_write::TimeSeries>> decoded = remote_write::DecodeWriteRequest(body);
    EXPECT_TRUE(decoded.ok());
    std::lock_guard<std::mutex> lock(mu_);
    for (const remote_write::TimeSeries& s : decoded.value()) {
      auto& into = stored_[remote_write::SeriesText(s.labels)];
      for (const remote_write::Sample& sample : s.samples) into.emplace_back(sample.ts_ms, sample.value);
    }
    return remote_write::HttpAnswer{204, "", -1};
  }

 private:
  std::mutex& mu_;
  Stored& stored_;
};

class NoSleep : public remote_write::Sleeper {
 public:
  void SleepMs(int64_t) override {}
};

// The scrapes as text, what the blocks path writes.
class TextScrapes : public ScrapeOutput {
 public:
  core::Status Scrape(int64_t ts_ms, std::string_view samples) override {
    std::string_view rest = samples;
    while (!rest.empty()) {
      const std::string_view line = rest.substr(0, rest.find('\n'));
      rest.remove_prefix(std::min(rest.size(), line.size() + 1));
      ParsedSample parsed;
      EXPECT_TRUE(ParseOpenMetricsSample(line, parsed).ok()) << line;
      stored[remote_write::SeriesText(parsed.labels)].emplace_back(ts_ms, parsed.value);
    }
    return core::Status::Ok();
  }
  core::Status Finish() override { return core::Status::Ok(); }
  Stored stored;
};

// The per-target series go to the queue straight from the exporter's store, the rest through the
// text: the receiver must hold exactly what the text scrapes hold, series by series, sample by
// sample, each at its scrape's time.
TEST(RemoteWriteOutputTest, AReceiverGetsExactlyTheSamplesOfTheTextScrapes) {
  BackfillOptions options;
  options.stream.data_dir = std::string(ACMETRACE_FIXTURES) + "/release";
  options.stream.range.to_ms = 1677601080000 + 1'800'000;  // the fixture's first half hour
  core::InputErrors text_errors(nullptr);
  TextScrapes text;
  core::Result<BackfillStats> by_text = RunBackfill(options, text_errors, text);
  ASSERT_TRUE(by_text.ok()) << by_text.status().message();

  std::mutex mu;
  Stored received;
  NoSleep sleeper;
  remote_write::QueueOptions queue_options;
  queue_options.shards = 3;
  queue_options.max_samples_per_send = 50;  // many requests: series split across them
  queue_options.capacity_samples = 200;
  RemoteWriteOutput out(std::make_unique<remote_write::WriteQueue>(
      queue_options, [&] { return std::make_unique<StoringTransport>(mu, received); }, sleeper));
  ASSERT_NE(out.target_sink(), nullptr);
  core::InputErrors errors(nullptr);
  core::Result<BackfillStats> by_queue = RunBackfill(options, errors, out);
  ASSERT_TRUE(by_queue.ok()) << by_queue.status().message();
  EXPECT_EQ(out.Stats().samples_sent, by_text.value().samples);

  bool persona = false;
  for (const auto& [series, samples] : text.stored) persona = persona || series.rfind("DCGM_", 0) == 0;
  EXPECT_TRUE(persona) << "the fixture has per-target series";
  ASSERT_EQ(received.size(), text.stored.size());
  for (const auto& [series, samples] : text.stored) {
    auto it = received.find(series);
    ASSERT_NE(it, received.end()) << series;
    EXPECT_EQ(it->second, samples) << series;
  }
}

}  // namespace
}  // namespace acmetrace::history

// Exporter: anomalies, self metrics, multi-target exposition, text format without timestamps.
#include "acmetrace/exporters/exporter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <prometheus/text_serializer.h>

#include <sstream>

namespace acmetrace::exporters {
namespace {

core::AnomalyEvent Anomaly(const std::string& kind, const std::string& subject, bool open, int64_t ts_ms) {
  core::AnomalyEvent a;
  a.cluster = "seren";
  a.kind = kind;
  a.subject = subject;
  a.open = open;
  a.ts_ms = ts_ms;
  a.value = 88;
  a.threshold = 85;
  return a;
}

core::UtilSample Util(const std::string& node, int64_t ts_ms, double util) {
  core::UtilSample s;
  s.cluster = "seren";
  s.node = node;
  s.ts_ms = ts_ms;
  s.gpu.push_back(core::GpuMetric{core::InternName("GPU_UTIL"), {util, util}});
  s.gpu.push_back(core::GpuMetric{core::InternName("GPU_TEMP"), {40, 41}});
  s.host.push_back(core::HostMetric{core::InternName("NODE_CPU_UTILIZATION"), 0.5});
  return s;
}

// Sample lines ("name{labels} value"), comments skipped.
std::vector<std::string> SampleLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

TEST(ExporterTest, AnomalyIsActiveWhileOpenAndCountedOnce) {
  core::ManualClock wall;
  Exporter exporter(ExportOptions{}, nullptr, &wall);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 1000));
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 1000));  // redelivered
  SeriesStore& store = exporter.store();
  const std::string active_key = store.MakeLabels(exporter.anomaly_active_family(),
                                                  {"seren", "gpu_overheat", "10.140.1.10-3"}).key;
  const std::string total_key = store.MakeLabels(exporter.anomalies_total_family(), {"seren", "gpu_overheat"}).key;
  EXPECT_EQ(store.Get(exporter.anomaly_active_family(), active_key), 1);
  EXPECT_EQ(store.Get(exporter.anomalies_total_family(), total_key), 1);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", false, 60'000));
  EXPECT_EQ(exporter.Exposition().find("10.140.1.10-3"), std::string::npos);  // closed: not state any more
  EXPECT_EQ(store.Get(exporter.anomalies_total_family(), total_key), 1);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 120'000));
  EXPECT_EQ(store.Get(exporter.anomalies_total_family(), total_key), 2);
}

core::MetricsWindow Window(int64_t end_ms) {
  core::MetricsWindow w;
  w.cluster = "seren";
  w.window_s = 60;
  w.start_ms = end_ms - 60'000;
  w.end_ms = end_ms;
  w.ts_ms = end_ms;
  return w;
}

// What a scraper sees of acmetrace_anomaly_active{...,subject="10.140.1.10-3"} now: "1", "0" or
// "" (no series).
std::string Shown(Exporter& exporter, const std::string& subject = "10.140.1.10-3") {
  const std::string text = exporter.ScrapeExposition();
  const std::string prefix = "acmetrace_anomaly_active{cluster=\"seren\",kind=\"gpu_overheat\",subject=\"" + subject + "\"} ";
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  return text.substr(at + prefix.size(), text.find('\n', at) - at - prefix.size());
}

TEST(ExporterTest, AFlagShorterThanAScrapeIntervalShowsOneForTwoIntervalsThenZeroThenGoes) {
  core::ManualClock wall(1'000'000);
  ExportOptions options;
  options.scrape_interval_ms = 15'000;
  Exporter exporter(options, nullptr, &wall);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 0));
  wall.AdvanceMs(5'000);  // closed 5 s of wall time later (5 trace minutes at speed 60)
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", false, 300'000));
  EXPECT_EQ(Shown(exporter), "1");
  // The state counts only what it shows: how long a closed flag stays on show is wall time, not data.
  EXPECT_NE(exporter.Exposition().find("acmetrace_series{metric=\"acmetrace_anomaly_active\"} 0\n"), std::string::npos);
  wall.AdvanceMs(24'999);  // 29.999 s after it was first shown
  EXPECT_EQ(Shown(exporter), "1");
  wall.AdvanceMs(1);  // shown at 1 for two scrape intervals: now the close shows
  EXPECT_EQ(Shown(exporter), "0");
  wall.AdvanceMs(4'999);  // 29.999 s after the close
  EXPECT_EQ(Shown(exporter), "0");
  wall.AdvanceMs(1);
  EXPECT_EQ(Shown(exporter), "");
  // Never part of the state written by --metrics-out once closed.
  EXPECT_EQ(exporter.Exposition().find("10.140.1.10-3"), std::string::npos);
}

TEST(ExporterTest, ALongFlagShowsZeroAtOnceWhenItClosesAndGoesTwoIntervalsLater) {
  core::ManualClock wall(0);
  ExportOptions options;
  options.scrape_interval_ms = 10'000;
  Exporter exporter(options, nullptr, &wall);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 0));
  wall.AdvanceMs(60'000);
  EXPECT_EQ(Shown(exporter), "1");
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", false, 3'600'000));
  EXPECT_EQ(Shown(exporter), "0");
  wall.AdvanceMs(19'999);
  EXPECT_EQ(Shown(exporter), "0");
  wall.AdvanceMs(1);
  EXPECT_EQ(Shown(exporter), "");
}

TEST(ExporterTest, AFlagReopenedWhileStillShownCountsAgainAndStaysOne) {
  core::ManualClock wall(0);
  Exporter exporter(ExportOptions{}, nullptr, &wall);  // 15 s scrapes
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 0));
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", false, 60'000));
  wall.AdvanceMs(10'000);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 600'000));
  const SeriesStore& store = exporter.store();
  EXPECT_EQ(store.Get(exporter.anomalies_total_family(),
                      store.MakeLabels(exporter.anomalies_total_family(), {"seren", "gpu_overheat"}).key),
            2);
  wall.AdvanceMs(60'000);
  EXPECT_EQ(Shown(exporter), "1");  // open again: 1 however long
  // Closed again after a minute at 1: 0 at once, gone two scrape intervals later.
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", false, 700'000));
  EXPECT_EQ(Shown(exporter), "0");
  wall.AdvanceMs(30'000);
  EXPECT_EQ(Shown(exporter), "");
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 800'000));
  EXPECT_NE(exporter.Exposition().find("10.140.1.10-3"), std::string::npos);
  // A close without an open (or repeated) changes nothing.
  exporter.Apply(Anomaly("gpu_overheat", "other", false, 600'000));
  EXPECT_EQ(Shown(exporter, "other"), "");
}

TEST(ExporterTest, AFlagReopenedWhileItsCloseStillShowsOneKeepsItsFirstShownTime) {
  core::ManualClock wall(0);  // a close at wall time 0 is a close like any other
  Exporter exporter(ExportOptions{}, nullptr, &wall);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 0));
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", false, 60'000));
  wall.AdvanceMs(20'000);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", true, 1'200'000));
  wall.AdvanceMs(5'000);
  exporter.Apply(Anomaly("gpu_overheat", "10.140.1.10-3", false, 1'500'000));
  EXPECT_EQ(Shown(exporter), "1");  // 1 since wall time 0: 25 s
  wall.AdvanceMs(5'000);
  EXPECT_EQ(Shown(exporter), "0");  // two scrape intervals at 1 since wall time 0
  wall.AdvanceMs(25'000);
  EXPECT_EQ(Shown(exporter), "");  // two intervals after the second close
}

TEST(ExporterTest, CountersOfAClusterExistAtZeroFromItsFirstRecord) {
  core::InputErrors errors(nullptr);
  ExportOptions options;
  options.anomaly_kinds = {"gpu_overheat", "node_failure"};
  core::ManualClock wall;
  Exporter exporter(options, &errors, &wall);
  exporter.Apply(Util("n1", 1000, 10));
  std::string text = exporter.Exposition();
  EXPECT_NE(text.find("acmetrace_anomalies_total{cluster=\"seren\",kind=\"gpu_overheat\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_anomalies_total{cluster=\"seren\",kind=\"node_failure\"} 0\n"), std::string::npos);
  for (const char* kind : {"job_trace", "utilization", "ipmi", "record"}) {
    EXPECT_NE(text.find("acmetrace_input_errors_total{cluster=\"seren\",kind=\"" + std::string(kind) + "\"} 0\n"),
              std::string::npos)
        << kind;
  }
  EXPECT_NE(text.find("acmetrace_jobs_finished_total{cluster=\"seren\",kind=\"gpu\",type=\"SFT\",state=\"FAILED\"} 0\n"),
            std::string::npos);
  // The first event then moves an existing series from 0 to 1 (what increase() needs).
  exporter.Apply(Anomaly("node_failure", "12345", true, 2000));
  errors.Report("seren", "ipmi", "GPU_AB_Power.csv", 3, "Time", "bad");
  text = exporter.Exposition();
  EXPECT_NE(text.find("acmetrace_anomalies_total{cluster=\"seren\",kind=\"node_failure\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_input_errors_total{cluster=\"seren\",kind=\"ipmi\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("cluster=\"kalos\""), std::string::npos);  // a cluster never seen has none
}

TEST(ExporterTest, ScrapesCarryBuildInfoAndProcessSeriesButTheStateDoesNot) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("n1", 1000, 10));
  const std::string scrape = exporter.ScrapeExposition();
  for (const char* name : {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
                           "process_max_fds ", "process_start_time_seconds ", "process_virtual_memory_bytes ",
                           "acmetrace_build_info{version=\""}) {
    EXPECT_NE(scrape.find(std::string("\n") + name), std::string::npos) << name;
  }
  const std::string state = exporter.Exposition();
  EXPECT_EQ(state.find("process_"), std::string::npos);
  EXPECT_EQ(state.find("acmetrace_build_info"), std::string::npos);
  // One node's series only for ?target=.
  EXPECT_EQ(exporter.ScrapeExposition("n1").find("process_"), std::string::npos);
}

TEST(ExporterTest, AnOpenAnomalyWithoutCloseExpiresAfterTheAnomalyTtlNotTheSeriesTtl) {
  ExportOptions options;
  options.series_ttl_ms = 60'000;
  options.anomaly_ttl_ms = 600'000;
  core::ManualClock wall;
  Exporter exporter(options, nullptr, &wall);
  exporter.Apply(Window(0));
  exporter.Apply(Anomaly("telemetry_gap", "n9", true, 0));
  const std::string key = exporter.store().MakeLabels(exporter.anomaly_active_family(), {"seren", "telemetry_gap", "n9"}).key;
  // Flags expire on the window clock (the processors' stream they come in), not on telemetry.
  for (int64_t t = 60'000; t <= 1'200'000; t += 60'000) exporter.Apply(Util("n1", t, 50));
  EXPECT_EQ(exporter.store().Get(exporter.anomaly_active_family(), key), 1);
  for (int64_t t = 60'000; t <= 600'000; t += 60'000) exporter.Apply(Window(t));
  EXPECT_EQ(exporter.store().Get(exporter.anomaly_active_family(), key), 1);
  for (int64_t t = 660'000; t <= 720'000; t += 60'000) exporter.Apply(Window(t));
  EXPECT_TRUE(std::isnan(exporter.store().Get(exporter.anomaly_active_family(), key)));
}

TEST(ExporterTest, ExpiryDependsOnTheDataNotOnHowTheTwoStreamsInterleave) {
  // The same util records and windows, once with the telemetry an hour ahead of the windows (an
  // in-process run at full speed) and once interleaved by time (Kafka): the same series expire,
  // as often, and the same remain.
  ExportOptions options;
  options.series_ttl_ms = 60'000;
  auto feed = [&options](bool telemetry_first) {
    Exporter exporter(options);
    std::vector<core::Record> util, windows;
    for (int64_t t = 0; t <= 3'600'000; t += 15'000) {
      if (t < 600'000 || t > 900'000) util.push_back(Util("flaky", t, 10));  // gone for 5 minutes
      util.push_back(Util("steady", t, 10));
      if (t % 60'000 == 0) windows.push_back(Window(t));
    }
    if (telemetry_first) {
      for (const core::Record& r : util) exporter.Apply(r);
      for (const core::Record& r : windows) exporter.Apply(r);
    } else {
      size_t w = 0;
      for (const core::Record& r : util) {
        while (w < windows.size() && core::TimestampMsOf(windows[w]) <= core::TimestampMsOf(r)) {
          exporter.Apply(windows[w++]);
        }
        exporter.Apply(r);
      }
      while (w < windows.size()) exporter.Apply(windows[w++]);
    }
    return exporter.Exposition();
  };
  const std::string interleaved = feed(false);
  EXPECT_EQ(feed(true), interleaved);
  // flaky's two GPUs, each once.
  EXPECT_NE(interleaved.find("acmetrace_series_expired_total{metric=\"DCGM_FI_DEV_GPU_UTIL\"} 2"), std::string::npos)
      << interleaved;
}

TEST(ExporterTest, ANodeNoLongerSeenExpiresByEventTime) {
  ExportOptions options;
  options.series_ttl_ms = 60'000;
  Exporter exporter(options);
  exporter.Apply(Util("gone", 0, 10));
  for (int64_t t = 0; t <= 120'000; t += 15'000) exporter.Apply(Util("stays", t, 10));
  const std::string text = exporter.Exposition();
  EXPECT_EQ(text.find("Hostname=\"gone\""), std::string::npos);
  EXPECT_NE(text.find("Hostname=\"stays\""), std::string::npos);
  EXPECT_NE(text.find("acmetrace_series_expired_total{metric=\"DCGM_FI_DEV_GPU_UTIL\"} 2"), std::string::npos);
}

TEST(ExporterTest, ExpositionHasNoTimestamps) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("n1", 1'688'169'600'000, 99));
  core::MetricsWindow w;
  w.cluster = "seren";
  w.window_s = 60;
  w.end_ms = w.ts_ms = 1'688'169'660'000;
  w.start_ms = w.end_ms - 60'000;
  w.metrics = {{"gpus_total", 2288}, {"jobs_submitted_total{type=SFT}", 5}};
  exporter.Apply(w);
  const std::string text = exporter.Exposition();
  const auto lines = SampleLines(text);
  ASSERT_GT(lines.size(), 10u);
  for (const std::string& line : lines) {
    // "name{labels} value" and nothing after the value: no timestamp field.
    const size_t close = line.rfind('}');
    const std::string tail = line.substr(close == std::string::npos ? line.find(' ') : close + 1);
    std::istringstream fields(tail);
    std::string value, extra;
    fields >> value;
    EXPECT_FALSE(fields >> extra) << "timestamp or junk after the value: " << line;
  }
  EXPECT_NE(text.find("acmetrace_gpus_capacity{cluster=\"seren\"} 2288"), std::string::npos);
  EXPECT_NE(text.find("# TYPE acmetrace_jobs_submitted_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge"), std::string::npos);
}

TEST(ExporterTest, TargetServesOnlyThatNodesPersonaSeries) {
  Exporter exporter(ExportOptions{});
  exporter.Apply(Util("10.140.1.10", 1000, 11));
  exporter.Apply(Util("10.140.1.11", 1000, 22));
  const std::string one = exporter.Exposition("10.140.1.11");
  for (const std::string& line : SampleLines(one)) {
    EXPECT_NE(line.find("Hostname=\"10.140.1.11\""), std::string::npos) << line;
    EXPECT_TRUE(line.rfind("DCGM_FI_", 0) == 0 || line.rfind("acmetrace_node_", 0) == 0) << line;
  }
  EXPECT_EQ(SampleLines(one).size(), 2u + 2u + 1u);  // util x2 GPUs, temp x2, node cpu
  const std::string all = exporter.Exposition();
  EXPECT_NE(all.find("10.140.1.10"), std::string::npos);
  EXPECT_NE(all.find("acmetrace_records_total{stage=\"export\",topic=\"acme.util\"} 2"), std::string::npos);
  EXPECT_TRUE(SampleLines(exporter.Exposition("no-such-node")).empty());
  EXPECT_EQ(exporter.TargetsJson(),
            "[{\"targets\":[\"10.140.1.10\",\"10.140.1.11\"],\"labels\":{\"cluster\":\"seren\"}}]\n");
}

TEST(ExporterTest, SelfMetricsCountStagesTraceTimeAndInputErrors) {
  core::InputErrors errors(nullptr);
  errors.Report("seren", "job_trace", "trace_seren.csv", 7, "gpu_num", "not a number");
  Exporter exporter(ExportOptions{}, &errors);
  exporter.CountRecords("replay", "acme.jobs", 10);
  exporter.CountRecords("replay", "acme.jobs", 5);
  exporter.NoteTraceTime("seren", 1'688'169'600'000);
  exporter.NoteTraceTime("seren", 1'688'169'000'000);  // never back
  exporter.SetReplayStatus(60, 1.5);
  const std::string text = exporter.Exposition();
  EXPECT_NE(text.find("acmetrace_records_total{stage=\"replay\",topic=\"acme.jobs\"} 15"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_replay_trace_time_seconds{cluster=\"seren\"} 1688169600"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_replay_speed 60"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_replay_lag_seconds 1.5"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_input_errors_total{cluster=\"seren\",kind=\"job_trace\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace acmetrace::exporters

namespace acmetrace::exporters {
namespace {

// The fast renderer must write what prometheus-cpp's own TextSerializer writes for the same
// families (label bytes exact, values equal as numbers: the two format doubles differently).
TEST(ExporterTest, TextEqualsPrometheusCppsTextSerializer) {
  core::ManualClock wall;
  Exporter exporter(ExportOptions{}, nullptr, &wall);
  exporter.Apply(Util("10.140.1.10", 1'688'169'600'000, 99.5));
  exporter.Apply(Anomaly("gpu_overheat", "odd \"subject\" \\ with\nnewline", true, 1'688'169'600'000));
  core::MetricsWindow w;
  w.cluster = "seren";
  w.window_s = 60;
  w.end_ms = w.ts_ms = 1'688'169'660'000;
  w.start_ms = w.end_ms - 60'000;
  w.metrics = {{"gpu_util_percent{stat=p95}", 8.1}, {"jobs_submitted_total{type=SFT}", 5}, {"ib_send", 1e-7}};
  exporter.Apply(w);
  exporter.CountRecords("replay", "acme.jobs", 3);
  std::ostringstream reference;
  prometheus::TextSerializer().Serialize(reference, exporter.Collect());
  const std::string fast = exporter.Exposition();
  auto split = [](const std::string& text) {
    std::vector<std::pair<std::string, double>> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (line[0] == '#') {
        lines.emplace_back(line, 0);
        continue;
      }
      const size_t space = line.rfind(' ');
      lines.emplace_back(line.substr(0, space), std::stod(line.substr(space + 1)));
    }
    return lines;
  };
  const auto a = split(reference.str());
  const auto b = split(fast);
  ASSERT_EQ(a.size(), b.size()) << reference.str() << "\n----\n" << fast;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_DOUBLE_EQ(a[i].second, b[i].second) << a[i].first;
  }
  EXPECT_NE(fast.find("subject=\"odd \\\"subject\\\" \\\\ with\\nnewline\""), std::string::npos) << fast;
}

}  // namespace
}  // namespace acmetrace::exporters

namespace acmetrace::exporters {
namespace {

TEST(ExportConfigTest, ScrapeIntervalAndTheDeclaredAnomalyKinds) {
  core::Config config;
  DeclareExportConfig(config);
  config.Declare("process.units", "ratio", "");
  config.Declare("process.windows_s", "60,3600", "");
  config.Declare("detect.gpu_overheat.enabled", "true", "");
  config.Declare("detect.gpu_overheat.open_c", "85", "");
  config.Declare("detect.node_failure.enabled", "false", "");
  ExportOptions o = ExportOptionsFromConfig(config);
  EXPECT_EQ(o.scrape_interval_ms, 15'000);  // the shipped configs/prometheus/prometheus.yml
  EXPECT_EQ(o.anomaly_kinds, (std::vector<std::string>{"gpu_overheat", "node_failure"}));
  ASSERT_TRUE(config.Set("export.scrape_interval_s", "0.5").ok());
  EXPECT_EQ(ExportOptionsFromConfig(config).scrape_interval_ms, 500);
  ASSERT_TRUE(config.Set("export.scrape_interval_s", "0").ok());
  EXPECT_THROW(ExportOptionsFromConfig(config), std::invalid_argument);
}

}  // namespace
}  // namespace acmetrace::exporters

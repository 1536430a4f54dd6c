// WindowMapping: processor keys to acmetrace_* families, the unit rule, views and replacement.
#include "acmetrace/exporters/window_mapping.h"

#include <gtest/gtest.h>

#include <cmath>

namespace acmetrace::exporters {
namespace {

core::MetricsWindow Window(int64_t window_s, int64_t end_ms, std::vector<std::pair<std::string, double>> metrics,
                           const std::string& cluster = "seren") {
  core::MetricsWindow w;
  w.cluster = cluster;
  w.window_s = window_s;
  w.start_ms = end_ms - window_s * 1000;
  w.end_ms = end_ms;
  w.ts_ms = end_ms;
  w.metrics = std::move(metrics);
  return w;
}

class WindowMappingTest : public testing::Test {
 protected:
  double Value(const std::string& family_name, const std::vector<std::string>& labels) {
    for (const auto& mf : store_.Collect()) {
      if (mf.name != family_name) continue;
      for (const auto& m : mf.metric) {
        std::vector<std::string> values;
        for (const auto& l : m.label) values.push_back(l.value);
        if (values != labels) continue;
        if (mf.type == prometheus::MetricType::Counter) return m.counter.value;
        if (mf.type == prometheus::MetricType::Untyped) return m.untyped.value;  // a summary's quantiles
        return m.gauge.value;
      }
    }
    return std::nan("");
  }
  std::vector<std::string> LabelNames(const std::string& family_name) {
    for (const auto& mf : store_.Collect()) {
      if (mf.name != family_name || mf.metric.empty()) continue;
      std::vector<std::string> names;
      for (const auto& l : mf.metric.front().label) names.push_back(l.name);
      return names;
    }
    return {};
  }

  ExportOptions options_;
  SeriesStore store_{StoreOptions{}};
  WindowMapping mapping_{options_, store_};
};

TEST(MetricKeyTest, ParsesNamesAndLabels) {
  MetricKey k;
  ASSERT_TRUE(ParseMetricKey("jobs_finished_total{kind=gpu,type=SFT,state=FAILED}", k));
  EXPECT_EQ(k.name, "jobs_finished_total");
  ASSERT_EQ(k.labels.size(), 3u);
  EXPECT_EQ(k.labels[2].first, "state");
  EXPECT_EQ(k.labels[2].second, "FAILED");
  ASSERT_TRUE(ParseMetricKey("gpus_total", k));
  EXPECT_TRUE(k.labels.empty());
  EXPECT_FALSE(ParseMetricKey("broken{kind", k));
  EXPECT_FALSE(ParseMetricKey("broken{kind}", k));
  EXPECT_FALSE(ParseMetricKey("", k));
}

TEST_F(WindowMappingTest, BaseWindowTotalsAndGaugesKeepTheirLabels) {
  mapping_.Apply(Window(60, 120'000,
                        {{"jobs_submitted_total{type=SFT}", 7},
                         {"jobs_finished_total{kind=gpu,type=SFT,state=FAILED}", 3},
                         {"job_gpu_seconds_total{type=SFT,state=FAILED}", 936},
                         {"jobs_running{type=SFT}", 2},
                         {"gpus_allocated", 16},
                         {"gpus_total", 2288},
                         {"late_records_total", 1}}));
  EXPECT_EQ(Value("acmetrace_jobs_submitted_total", {"seren", "SFT"}), 7);
  EXPECT_EQ(Value("acmetrace_jobs_finished_total", {"seren", "gpu", "SFT", "FAILED"}), 3);
  EXPECT_EQ(LabelNames("acmetrace_jobs_finished_total"), (std::vector<std::string>{"cluster", "kind", "type", "state"}));
  EXPECT_EQ(Value("acmetrace_job_gpu_seconds_total", {"seren", "SFT", "FAILED"}), 936);
  EXPECT_EQ(Value("acmetrace_jobs_running", {"seren", "SFT"}), 2);
  EXPECT_EQ(Value("acmetrace_gpus_allocated", {"seren"}), 16);
  EXPECT_EQ(Value("acmetrace_gpus_capacity", {"seren"}), 2288);
  EXPECT_EQ(Value("acmetrace_late_records_total", {"seren"}), 1);
  EXPECT_EQ(mapping_.unmapped(), 0);
}

TEST_F(WindowMappingTest, UnitRuleMakesRatiosBytesAndBytesPerSecond) {
  mapping_.Apply(Window(60, 60'000,
                        {{"gpu_util_percent{stat=p95}", 97},
                         {"sm_active_percent{stat=mean}", 41},
                         {"fb_used_mib{stat=mean}", 1024},
                         {"node_cpu_util_percent{stat=mean}", 8.1},
                         {"node_cpu_util_percent{stat=p95}", 50},
                         {"ib_send", 3.5},
                         {"gpu_power_watts", 4000}}));
  EXPECT_DOUBLE_EQ(Value("acmetrace_cluster_gpu_util_ratio", {"seren", "p95"}), 0.97);
  EXPECT_DOUBLE_EQ(Value("acmetrace_cluster_sm_active_ratio", {"seren", "mean"}), 0.41);
  EXPECT_DOUBLE_EQ(Value("acmetrace_cluster_fb_used_bytes", {"seren", "mean"}), 1024.0 * 1048576.0);
  // The cluster CPU ratio is the mean only, without a stat label.
  EXPECT_DOUBLE_EQ(Value("acmetrace_cluster_cpu_util_ratio", {"seren"}), 0.081);
  EXPECT_EQ(LabelNames("acmetrace_cluster_cpu_util_ratio"), std::vector<std::string>{"cluster"});
  EXPECT_DOUBLE_EQ(Value("acmetrace_cluster_ib_send_bytes_per_second", {"seren"}), 3.5e6);
  EXPECT_EQ(Value("acmetrace_cluster_gpu_power_watts", {"seren"}), 4000);
}

TEST_F(WindowMappingTest, GpuActivityRatiosAreClampedAtOneButHostRatiosAreNot) {
  // A sketch's p95 of 100 % may read 100.5 %; Kalos' processed CPU utilisation really exceeds 100 %.
  mapping_.Apply(Window(60, 60'000, {{"gpu_util_percent{stat=p95}", 100.49}, {"node_cpu_util_percent{stat=mean}", 130}}));
  EXPECT_EQ(Value("acmetrace_cluster_gpu_util_ratio", {"seren", "p95"}), 1.0);
  EXPECT_DOUBLE_EQ(Value("acmetrace_cluster_cpu_util_ratio", {"seren"}), 1.3);
}

TEST_F(WindowMappingTest, QuantilesAndFailureRatioComeFromTheHourView) {
  // The same keys in the 300 s view feed nothing.
  mapping_.Apply(Window(300, 3'600'000, {{"job_queue_seconds{q=0.99}", 5}, {"job_failure_ratio", 0.9}}));
  EXPECT_TRUE(std::isnan(Value("acmetrace_job_failure_ratio", {"seren"})));
  mapping_.Apply(Window(3600, 3'600'000,
                        {{"job_queue_seconds{q=0.5}", 1},
                         {"job_queue_seconds{q=0.99}", 446},
                         {"job_duration_seconds{q=0.95}", 1414},
                         {"job_failure_ratio", 0.429},
                         {"gpu_jobs_finished", 100}}));
  EXPECT_EQ(Value("acmetrace_job_queue_seconds", {"seren", "0.99"}), 446);
  EXPECT_EQ(LabelNames("acmetrace_job_queue_seconds"), (std::vector<std::string>{"cluster", "quantile"}));
  EXPECT_EQ(Value("acmetrace_job_duration_seconds", {"seren", "0.95"}), 1414);
  EXPECT_DOUBLE_EQ(Value("acmetrace_job_failure_ratio", {"seren"}), 0.429);
  EXPECT_EQ(Value("acmetrace_gpu_jobs_finished_last_hour", {"seren"}), 100);
}

TEST_F(WindowMappingTest, ANewerWindowReplacesGaugesButNotOtherClustersOrCounters) {
  mapping_.Apply(Window(60, 60'000,
                        {{"jobs_running{type=SFT}", 2}, {"jobs_running{type=Eval}", 1},
                         {"jobs_submitted_total{type=Eval}", 4}}));
  mapping_.Apply(Window(60, 60'000, {{"jobs_running{type=SFT}", 9}}, "kalos"));
  mapping_.Apply(Window(60, 120'000, {{"jobs_running{type=SFT}", 3}}));
  EXPECT_EQ(Value("acmetrace_jobs_running", {"seren", "SFT"}), 3);
  EXPECT_TRUE(std::isnan(Value("acmetrace_jobs_running", {"seren", "Eval"})));  // gone, not stale
  EXPECT_EQ(Value("acmetrace_jobs_running", {"kalos", "SFT"}), 9);
  EXPECT_EQ(Value("acmetrace_jobs_submitted_total", {"seren", "Eval"}), 4);  // counters are not removed
}

TEST_F(WindowMappingTest, KnownJobCountersOfAClusterStartAtZeroAndKeepWhatTheyHave) {
  mapping_.Apply(Window(60, 60'000, {{"jobs_finished_total{kind=gpu,type=SFT,state=FAILED}", 3}}));
  mapping_.CreateKnownCounters("seren");  // after a first window: what it has stays
  mapping_.CreateKnownCounters("kalos");
  EXPECT_EQ(Value("acmetrace_jobs_finished_total", {"seren", "gpu", "SFT", "FAILED"}), 3);
  for (const char* cluster : {"seren", "kalos"}) {
    EXPECT_EQ(Value("acmetrace_jobs_finished_total", {cluster, "cpu", "Pretrain", "NODE_FAIL"}), 0) << cluster;
    EXPECT_EQ(Value("acmetrace_jobs_finished_total", {cluster, "gpu", "Debug", "TIMEOUT"}), 0) << cluster;
    EXPECT_EQ(Value("acmetrace_jobs_submitted_total", {cluster, "MLLM"}), 0) << cluster;
    EXPECT_EQ(Value("acmetrace_jobs_started_total", {cluster, "Eval"}), 0) << cluster;
    EXPECT_EQ(Value("acmetrace_job_gpu_seconds_total", {cluster, "Other", "CANCELLED"}), 0) << cluster;
    EXPECT_EQ(Value("acmetrace_late_records_total", {cluster}), 0) << cluster;
  }
  // 6 types x 5 states x gpu/cpu per cluster.
  const FamilyId finished = mapping_.FamilyOf("jobs_finished_total", 60);
  EXPECT_EQ(store_.counts(finished).series, 2 * 6 * 5 * 2);
}

TEST_F(WindowMappingTest, ZeroCountersDoNotExpireWhenTheirClusterMovesOn) {
  SeriesStore store(StoreOptions{/*series_ttl_ms=*/60'000, 86'400'000, 20'000});
  WindowMapping mapping(options_, store);
  mapping.CreateKnownCounters("seren");
  store.AdvanceClock("seren", 0);
  store.AdvanceClock("seren", 3'600'000);  // an hour of telemetry without a NODE_FAIL
  const FamilyId finished = mapping.FamilyOf("jobs_finished_total", 60);
  EXPECT_EQ(store.Get(finished, store.MakeLabels(finished, {"seren", "gpu", "SFT", "NODE_FAIL"}).key), 0);
}

TEST_F(WindowMappingTest, QuantileFamiliesAreSummaries) {
  mapping_.Apply(Window(3600, 3'600'000, {{"job_queue_seconds{q=0.5}", 1}}));
  std::string text;
  store_.AppendText(text);
  EXPECT_NE(text.find("# TYPE acmetrace_job_queue_seconds summary\n"), std::string::npos) << text;
  EXPECT_NE(text.find("acmetrace_job_queue_seconds{cluster=\"seren\",quantile=\"0.5\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("acmetrace_job_queue_seconds_count"), std::string::npos);  // no _sum/_count: a rolling hour
}

TEST_F(WindowMappingTest, UnknownAndMalformedKeysAreCountedNotFatal) {
  mapping_.Apply(Window(60, 60'000, {{"no_such_metric", 1}, {"bad{key", 2}, {"gpus_total", 2288}}));
  EXPECT_EQ(mapping_.unmapped(), 2);
  EXPECT_EQ(Value("acmetrace_gpus_capacity", {"seren"}), 2288);
}

TEST_F(WindowMappingTest, EveryDocumentedProcessorKeyMapsSomewhere) {
  for (const char* base_key : {"jobs_submitted_total", "jobs_started_total", "jobs_finished_total",
                               "job_gpu_seconds_total", "late_records_total", "records_total", "jobs_running",
                               "jobs_pending", "gpus_allocated", "gpus_pending", "gpus_total", "gpu_allocation_ratio",
                               "gpu_util_percent", "sm_active_percent", "sm_occupancy_percent",
                               "tensor_active_percent", "dram_active_percent", "fb_used_mib", "gpus_idle",
                               "gpus_reporting", "gpu_power_watts", "gpu_temp_max_celsius", "node_cpu_util_percent",
                               "node_memory_util_percent", "ib_send", "ib_receive", "ipmi_power_watts"}) {
    EXPECT_GE(mapping_.FamilyOf(base_key, 60), 0) << base_key;
  }
  for (const char* hour_key : {"job_queue_seconds", "job_duration_seconds", "job_failure_ratio", "gpu_jobs_finished"}) {
    EXPECT_GE(mapping_.FamilyOf(hour_key, 3600), 0) << hour_key;
  }
}

}  // namespace
}  // namespace acmetrace::exporters

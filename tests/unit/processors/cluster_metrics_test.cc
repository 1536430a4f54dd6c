// Every metric of a closed window on a small input computed by hand.
#include "acmetrace/processors/cluster_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "acmetrace/processors/state_codec.h"

namespace acmetrace::processors {
namespace {

constexpr int64_t kT0 = 1677600000000;  // a whole minute

core::JobEvent Job(core::JobEventKind kind, int64_t at_s, const std::string& id, const std::string& type,
                   int64_t gpus) {
  core::JobEvent e;
  e.cluster = "seren";
  e.event = kind;
  e.ts_ms = kT0 + at_s * 1000;
  e.job_id = id;
  e.user = "u1";
  e.type = type;
  e.node_num = 1;
  e.gpu_num = gpus;
  e.cpu_num = 8;
  return e;
}

core::JobEvent Start(int64_t at_s, const std::string& id, const std::string& type, int64_t gpus, double queue) {
  core::JobEvent e = Job(core::JobEventKind::kStart, at_s, id, type, gpus);
  e.queue_s = queue;
  return e;
}

core::JobEvent End(int64_t at_s, const std::string& id, const std::string& type, int64_t gpus, const std::string& state,
                   double duration, double queue) {
  core::JobEvent e = Job(core::JobEventKind::kEnd, at_s, id, type, gpus);
  e.state = state;
  e.duration_s = duration;
  e.queue_s = queue;
  e.gpu_time = duration * static_cast<double>(gpus);
  return e;
}

core::UtilSample Util(int64_t at_s, const std::string& node,
                      std::vector<std::pair<std::string, std::vector<double>>> gpu,
                      std::vector<std::pair<std::string, double>> host) {
  core::UtilSample s;
  s.cluster = "seren";
  s.node = node;
  s.ts_ms = kT0 + at_s * 1000;
  for (auto& [name, values] : gpu) s.gpu.push_back({core::InternName(name), values});
  for (auto& [name, value] : host) s.host.push_back({core::InternName(name), value});
  return s;
}

core::PowerSample Power(int64_t at_s, const std::string& model, double watts) {
  core::PowerSample p;
  p.cluster = "seren";
  p.model = model;
  p.ts_ms = kT0 + at_s * 1000;
  p.fields = {{core::InternName("CPU_Power"), 1}, {core::InternName("Sys_Total_Power"), watts}};
  return p;
}

std::map<std::string, double> AsMap(const core::MetricsWindow& w) { return {w.metrics.begin(), w.metrics.end()}; }

const double kNan = std::nan("");

std::vector<core::Record> FirstMinute() {
  std::vector<core::Record> r;
  r.emplace_back(Util(0, "10.0.0.1",
                      {{"GPU_UTIL", {0, 50, kNan, 100}},
                       {"SM_ACTIVE", {0.5, 0.25, kNan, 1.0}},
                       {"GPU_TEMP", {40, 70, kNan, 55}},
                       {"POWER_USAGE", {100, 200, kNan, 300}},
                       {"FB_USED", {1000, 2000, kNan, 3000}},
                       {"XID_ERRORS", {0, 0, 0, 0}}},
                      {{"NODE_CPU_UTILIZATION", 0.5},
                       {"NODE_MEMORY_UTILIZATION", 0.25},
                       {"NODE_IB_SEND", 100},
                       {"NODE_IB_RECEIVE", 50}}));
  r.emplace_back(Util(0, "10.0.0.2", {{"GPU_UTIL", {0, 0}}, {"POWER_USAGE", {50, 50}}},
                      {{"NODE_CPU_UTILIZATION", 0.1}, {"NODE_IB_SEND", 300}}));
  r.emplace_back(Power(0, "GPU_A", 2000));
  r.emplace_back(Power(0, "CPU_D", 500));
  r.emplace_back(Job(core::JobEventKind::kSubmit, 1, "A", "Eval", 8));
  r.emplace_back(Job(core::JobEventKind::kSubmit, 2, "B", "Pretrain", 16));
  r.emplace_back(Job(core::JobEventKind::kSubmit, 3, "C", "Other", 0));
  r.emplace_back(Start(10, "A", "Eval", 8, 9));
  r.emplace_back(Start(11, "C", "Other", 0, 8));
  r.emplace_back(Util(15, "10.0.0.1", {{"GPU_UTIL", {10, 20, 30, 40}}, {"POWER_USAGE", {10, 10, 10, 10}}}, {}));
  r.emplace_back(End(20, "C", "Other", 0, "COMPLETED", 9, 8));
  r.emplace_back(Power(30, "GPU_A", 3000));
  r.emplace_back(End(50, "A", "Eval", 8, "FAILED", 40, 9));
  return r;
}

TEST(ClusterMetricsTest, EveryMetricOfOneMinuteByHand) {
  ProcessOptions options;
  ClusterMetrics metrics("seren", options);
  for (const core::Record& r : FirstMinute()) metrics.Apply(r, kT0, false);
  std::vector<core::MetricsWindow> out;
  metrics.CloseWindow(kT0, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].window_s, 60);
  EXPECT_EQ(out[0].start_ms, kT0);
  EXPECT_EQ(out[0].end_ms, kT0 + 60'000);
  EXPECT_EQ(out[1].window_s, 300);
  EXPECT_EQ(out[1].start_ms, kT0 + 60'000 - 300'000);
  EXPECT_EQ(out[2].window_s, 3600);

  const std::map<std::string, double> m = AsMap(out[0]);
  const std::map<std::string, double> expected_exact = {
      {"records", 13},
      {"late_records", 0},
      {"jobs_submitted{type=Eval}", 1},
      {"jobs_submitted{type=Pretrain}", 1},
      {"jobs_submitted{type=Other}", 1},
      {"jobs_started{type=Eval}", 1},
      {"jobs_started{type=Other}", 1},
      {"jobs_finished{kind=cpu,type=Other,state=COMPLETED}", 1},
      {"jobs_finished{kind=gpu,type=Eval,state=FAILED}", 1},
      {"job_gpu_seconds{type=Eval,state=FAILED}", 320},
      {"job_gpu_seconds{type=Other,state=COMPLETED}", 0},
      {"gpu_jobs_finished", 1},
      {"job_failure_ratio", 1},
      {"gpu_util_percent{stat=mean}", 250.0 / 9},
      {"sm_active_percent{stat=mean}", 175.0 / 3},
      {"fb_used_mib{stat=mean}", 2000},
      {"node_cpu_util_percent{stat=mean}", 30},
      {"node_memory_util_percent{stat=mean}", 25},
      {"gpus_idle", 1.5},       // 3 idle GPUs at :00, none at :15
      {"gpus_reporting", 4.5},  // 5 then 4
      {"gpu_power_watts", 370},  // 700 W at :00, 40 W at :15
      {"ib_send", 400},
      {"ib_receive", 50},
      {"gpu_temp_max_celsius", 70},
      {"ipmi_power_watts{model=GPU_A}", 2500},
      {"ipmi_power_watts{model=CPU_D}", 500},
      // Gauges at the window's end: B waits with 16 GPUs; A and C are done.
      {"jobs_running{type=Eval}", 0},
      {"jobs_running{type=Other}", 0},
      {"jobs_running{type=Pretrain}", 0},
      {"jobs_pending{type=Eval}", 0},
      {"jobs_pending{type=Other}", 0},
      {"jobs_pending{type=Pretrain}", 1},
      {"gpus_allocated", 0},
      {"gpus_pending", 16},
      {"gpus_total", 6},  // the GPUs the telemetry showed: 10.0.0.1's four and 10.0.0.2's two
      {"gpu_allocation_ratio", 0},
      // Totals since the start.
      {"jobs_submitted_total{type=Eval}", 1},
      {"jobs_submitted_total{type=Other}", 1},
      {"jobs_submitted_total{type=Pretrain}", 1},
      {"jobs_started_total{type=Eval}", 1},
      {"jobs_started_total{type=Other}", 1},
      {"jobs_finished_total{kind=cpu,type=Other,state=COMPLETED}", 1},
      {"jobs_finished_total{kind=gpu,type=Eval,state=FAILED}", 1},
      {"job_gpu_seconds_total{type=Eval,state=FAILED}", 320},
      {"job_gpu_seconds_total{type=Other,state=COMPLETED}", 0},
      {"records_total", 13},
      {"late_records_total", 0},
  };
  // Quantiles come from the sketch: within 1% of the exact order statistic.
  const std::map<std::string, double> expected_approx = {
      {"job_queue_seconds{q=0.5}", 9},       {"job_queue_seconds{q=0.95}", 9},   {"job_queue_seconds{q=0.99}", 9},
      {"job_duration_seconds{q=0.5}", 40},   {"job_duration_seconds{q=0.95}", 40}, {"job_duration_seconds{q=0.99}", 40},
      {"gpu_util_percent{stat=p50}", 20},    {"gpu_util_percent{stat=p95}", 50},
      {"sm_active_percent{stat=p50}", 50},   {"sm_active_percent{stat=p95}", 50},
      {"fb_used_mib{stat=p50}", 2000},       {"fb_used_mib{stat=p95}", 2000},
      {"node_cpu_util_percent{stat=p50}", 10}, {"node_cpu_util_percent{stat=p95}", 10},
      {"node_memory_util_percent{stat=p50}", 25}, {"node_memory_util_percent{stat=p95}", 25},
  };
  for (const auto& [name, value] : expected_exact) {
    ASSERT_TRUE(m.count(name)) << name;
    EXPECT_DOUBLE_EQ(m.at(name), value) << name;
  }
  for (const auto& [name, value] : expected_approx) {
    ASSERT_TRUE(m.count(name)) << name;
    EXPECT_NEAR(m.at(name), value, value * 0.01) << name;
  }
  EXPECT_EQ(m.size(), expected_exact.size() + expected_approx.size()) << "an unexpected metric appeared";
  // Names are sorted, so equal state writes equal bytes.
  for (size_t i = 1; i < out[0].metrics.size(); ++i) EXPECT_LT(out[0].metrics[i - 1].first, out[0].metrics[i].first);

  // The rolling views of the first minute hold the same window metrics, without gauges and totals.
  const std::map<std::string, double> five = AsMap(out[1]);
  EXPECT_EQ(five.at("records"), 13);
  EXPECT_EQ(five.count("jobs_running{type=Eval}"), 0u);
  EXPECT_EQ(five.count("records_total"), 0u);
  EXPECT_DOUBLE_EQ(five.at("gpu_power_watts"), 370);
}

TEST(ClusterMetricsTest, RollingViewsMergeTheLastBaseWindows) {
  ProcessOptions options;
  ClusterMetrics metrics("seren", options);
  std::vector<core::MetricsWindow> out;
  for (const core::Record& r : FirstMinute()) metrics.Apply(r, kT0, false);
  metrics.CloseWindow(kT0, out);
  // Minute 2: B starts after 68 s in the queue; minute 7 (5 minutes later): only a sample.
  metrics.Apply(Start(70, "B", "Pretrain", 16, 68), kT0 + 60'000, false);
  metrics.Apply(Util(75, "10.0.0.2", {{"GPU_UTIL", {100, 100}}}, {}), kT0 + 60'000, false);
  out.clear();
  metrics.CloseWindow(kT0 + 60'000, out);
  std::map<std::string, double> minute = AsMap(out[0]);
  EXPECT_EQ(minute.at("jobs_running{type=Pretrain}"), 1);
  EXPECT_EQ(minute.at("jobs_pending{type=Pretrain}"), 0);
  EXPECT_EQ(minute.at("gpus_allocated"), 16);
  EXPECT_EQ(minute.at("gpus_pending"), 0);
  EXPECT_DOUBLE_EQ(minute.at("gpu_allocation_ratio"), 16.0 / 6);
  EXPECT_EQ(minute.count("jobs_submitted{type=Eval}"), 0u);
  EXPECT_EQ(minute.at("jobs_submitted_total{type=Eval}"), 1);
  EXPECT_NEAR(minute.at("job_queue_seconds{q=0.5}"), 68, 0.68);
  std::map<std::string, double> five = AsMap(out[1]);
  EXPECT_EQ(five.at("records"), 15);
  EXPECT_EQ(five.at("jobs_started{type=Pretrain}"), 1);
  EXPECT_EQ(five.at("jobs_started{type=Eval}"), 1);
  // GPU jobs started in the view: queue 9 and 68; rank floor(q * 1) = 0 for q < 1.
  EXPECT_NEAR(five.at("job_queue_seconds{q=0.5}"), 9, 0.09);
  EXPECT_DOUBLE_EQ(five.at("gpu_util_percent{stat=mean}"), 450.0 / 11);
  EXPECT_DOUBLE_EQ(five.at("gpus_idle"), 1.0);  // (3 + 0 + 0) / 3 sample times

  metrics.Apply(Util(365, "10.0.0.2", {{"GPU_UTIL", {0, 0}}}, {}), kT0 + 360'000, false);
  out.clear();
  metrics.CloseWindow(kT0 + 360'000, out);
  five = AsMap(out[1]);  // [kT0+120s, kT0+420s): the first two minutes have left the view
  EXPECT_EQ(five.at("records"), 1);
  EXPECT_EQ(five.count("jobs_started{type=Eval}"), 0u);
  const std::map<std::string, double> hour = AsMap(out[2]);
  EXPECT_EQ(hour.at("records"), 16);
  EXPECT_EQ(hour.at("jobs_submitted{type=Pretrain}"), 1);
  EXPECT_DOUBLE_EQ(hour.at("job_failure_ratio"), 1);
}

TEST(ClusterMetricsTest, PercentInputIsNotScaledAndLateRecordsAreCounted) {
  ProcessOptions options;
  options.units = TelemetryUnits::kPercent;
  ClusterMetrics metrics("kalos", options);
  core::UtilSample s = Util(0, "n", {{"SM_ACTIVE", {50}}, {"GPU_UTIL", {50}}}, {{"NODE_CPU_UTILIZATION", 130}});
  s.cluster = "kalos";
  metrics.Apply(s, kT0, true);
  std::vector<core::MetricsWindow> out;
  metrics.CloseWindow(kT0, out);
  const std::map<std::string, double> m = AsMap(out[0]);
  EXPECT_DOUBLE_EQ(m.at("sm_active_percent{stat=mean}"), 50);
  EXPECT_DOUBLE_EQ(m.at("gpu_util_percent{stat=mean}"), 50);
  EXPECT_DOUBLE_EQ(m.at("node_cpu_util_percent{stat=mean}"), 130);  // Kalos CPU exceeds 100 percent
  EXPECT_EQ(m.at("late_records"), 1);
  EXPECT_EQ(m.at("late_records_total"), 1);
  EXPECT_EQ(m.at("gpus_total"), 1);  // one GPU seen
}

TEST(ClusterMetricsTest, CapacityIsTheGpusSeenInTelemetryElseTheConfiguredSize) {
  ProcessOptions options;  // capacity_gpus: the published seren=2288
  ClusterMetrics metrics("seren", options);
  std::vector<core::MetricsWindow> out;
  // Only job events: nothing shows the cluster's size but the configuration.
  metrics.Apply(Start(5, "A", "SFT", 8, 1), kT0, false);
  metrics.CloseWindow(kT0, out);
  EXPECT_EQ(AsMap(out[0]).at("gpus_total"), 2288);
  EXPECT_DOUBLE_EQ(AsMap(out[0]).at("gpu_allocation_ratio"), 8.0 / 2288);
  // Telemetry of two 8-GPU nodes (the last GPU of one reports only in a later sample, in another
  // metric): 16 GPUs, and a later null sample does not shrink it.
  metrics.Apply(Util(60, "n1", {{"GPU_UTIL", {1, 2, 3, 4, 5, 6, 7, 8}}}, {}), kT0 + 60'000, false);
  metrics.Apply(Util(60, "n2", {{"GPU_UTIL", {1, 2, 3, 4, 5, 6, 7, kNan}}}, {}), kT0 + 60'000, false);
  metrics.Apply(Util(75, "n2", {{"GPU_UTIL", {kNan}}, {"GPU_TEMP", {40, 40, 40, 40, 40, 40, 40, 41}}}, {}),
                kT0 + 60'000, false);
  metrics.Apply(Util(90, "n1", {{"GPU_UTIL", {kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan}}}, {}), kT0 + 60'000,
                false);
  out.clear();
  metrics.CloseWindow(kT0 + 60'000, out);
  EXPECT_EQ(AsMap(out[0]).at("gpus_total"), 16);
  EXPECT_DOUBLE_EQ(AsMap(out[0]).at("gpu_allocation_ratio"), 8.0 / 16);
}

TEST(ClusterMetricsTest, JobsSeenOnlyFromTheirStartOrEndKeepGaugesSane) {
  ProcessOptions options;
  ClusterMetrics metrics("seren", options);
  // Input that begins mid-trace: a start without its submit, an end without anything before.
  metrics.Apply(Start(1, "X", "SFT", 4, 3), kT0, false);
  metrics.Apply(End(2, "Y", "SFT", 2, "TIMEOUT", 100, 1), kT0, false);
  std::vector<core::MetricsWindow> out;
  metrics.CloseWindow(kT0, out);
  const std::map<std::string, double> m = AsMap(out[0]);
  EXPECT_EQ(m.at("jobs_running{type=SFT}"), 1);
  EXPECT_EQ(m.at("gpus_allocated"), 4);
  EXPECT_EQ(m.at("jobs_finished{kind=gpu,type=SFT,state=TIMEOUT}"), 1);
  EXPECT_DOUBLE_EQ(m.at("job_failure_ratio"), 1);  // TIMEOUT counts as failed
}

TEST(ClusterMetricsTest, SaveAndLoadRestoreEverything) {
  ProcessOptions options;
  ClusterMetrics a("seren", options);
  for (const core::Record& r : FirstMinute()) a.Apply(r, kT0, false);
  std::vector<core::MetricsWindow> ignored;
  a.CloseWindow(kT0, ignored);
  StateWriter w;
  a.Save(w);
  ClusterMetrics b("seren", options);
  StateReader in(w.bytes());
  ASSERT_TRUE(b.Load(in));
  EXPECT_TRUE(in.at_end());
  std::vector<core::MetricsWindow> out_a, out_b;
  // The capacity seen in telemetry is not saved (the snapshot format is unchanged): the restored
  // instance sees it again from the next window's telemetry, where every node reports.
  for (ClusterMetrics* m : {&a, &b}) {
    m->Apply(Start(70, "B", "Pretrain", 16, 68), kT0 + 60'000, false);
    m->Apply(Util(75, "10.0.0.1", {{"GPU_UTIL", {1, 1, 1, 1}}}, {}), kT0 + 60'000, false);
    m->Apply(Util(75, "10.0.0.2", {{"GPU_UTIL", {1, 1}}}, {}), kT0 + 60'000, false);
  }
  a.CloseWindow(kT0 + 60'000, out_a);
  b.CloseWindow(kT0 + 60'000, out_b);
  EXPECT_EQ(AsMap(out_b[0]).at("gpus_total"), 6);
  ASSERT_EQ(out_a.size(), out_b.size());
  for (size_t i = 0; i < out_a.size(); ++i) EXPECT_EQ(out_a[i].metrics, out_b[i].metrics);
  ClusterMetrics wrong("kalos", options);
  StateReader again(w.bytes());
  EXPECT_FALSE(wrong.Load(again));
}

}  // namespace
}  // namespace acmetrace::processors

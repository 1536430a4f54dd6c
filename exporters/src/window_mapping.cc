// WindowMapping: the table from processor metric keys to Prometheus families, in one place.
#include "acmetrace/exporters/window_mapping.h"

namespace acmetrace::exporters {

bool ParseMetricKey(std::string_view key, MetricKey& out) {
  out.labels.clear();
  const size_t brace = key.find('{');
  if (brace == std::string_view::npos) {
    out.name = key;
    return !key.empty() && key.find('}') == std::string_view::npos;
  }
  if (key.back() != '}' || brace == 0) return false;
  out.name = key.substr(0, brace);
  std::string_view rest = key.substr(brace + 1, key.size() - brace - 2);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    out.labels.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return true;
}

// The rules below are a table written as calls (each its own metric, help and unit): alike in shape by design.
WindowMapping::WindowMapping(const ExportOptions& options, SeriesStore& store) : options_(options), store_(store) {
  const int64_t base = options.base_window_s;
  const int64_t hour = options.hour_window_s;
  using L = std::vector<std::string>;
  auto gauge = [](const char* name, const char* help, L labels) {
    L all{"cluster"};
    all.insert(all.end(), labels.begin(), labels.end());
    return FamilySpec{name, help, SeriesType::kGauge, all, Expiry::kSubject, false};
  };
  // Counters never expire: their label sets are created at 0 with the cluster (CreateKnownCounters)
  // and a job type that is quiet for a while must not vanish and come back as a reset.
  auto counter = [](const char* name, const char* help, L labels) {
    L all{"cluster"};
    all.insert(all.end(), labels.begin(), labels.end());
    return FamilySpec{name, help, SeriesType::kCounter, all, Expiry::kNever, false};
  };
  auto summary = [](const char* name, const char* help) {
    return FamilySpec{name, help, SeriesType::kSummary, {"cluster", "quantile"}, Expiry::kSubject, false};
  };
  constexpr double kPercent = 0.01;
  constexpr double kMiB = 1048576.0;

  // Totals since the start of the processed stream (base window).
  AddRule(base, "jobs_submitted_total", counter("acmetrace_jobs_submitted_total", "job submissions", {"type"}), 1,
          {"type"});
  AddRule(base, "jobs_started_total", counter("acmetrace_jobs_started_total", "job starts", {"type"}), 1, {"type"});
  AddRule(base, "jobs_finished_total",
          counter("acmetrace_jobs_finished_total", "job ends by kind (gpu: gpu_num > 0, cpu), type and final state",
                  {"kind", "type", "state"}),
          1, {"kind", "type", "state"});
  AddRule(base, "job_gpu_seconds_total",
          counter("acmetrace_job_gpu_seconds_total", "published gpu_time (GPU-seconds) of ended jobs",
                  {"type", "state"}),
          1, {"type", "state"});
  AddRule(base, "late_records_total",
          counter("acmetrace_late_records_total", "records that arrived below the watermark (counted, not lost)", {}),
          1);
  AddRule(base, "records_total",
          counter("acmetrace_cluster_records_total", "input records the processors consumed for the cluster", {}), 1);
  // State at the base window's end.
  AddRule(base, "jobs_running", gauge("acmetrace_jobs_running", "jobs started and not ended", {"type"}), 1, {"type"});
  AddRule(base, "jobs_pending", gauge("acmetrace_jobs_pending", "jobs submitted and not started", {"type"}), 1,
          {"type"});
  AddRule(base, "gpus_allocated", gauge("acmetrace_gpus_allocated", "GPUs of the running jobs", {}), 1);
  AddRule(base, "gpus_pending", gauge("acmetrace_gpus_pending", "GPUs requested by the pending jobs", {}), 1);
  AddRule(base, "gpus_total",
          gauge("acmetrace_gpus_capacity",
                "GPUs of the cluster: the data set's declared size, else the GPUs seen in telemetry, else "
                "process.capacity_gpus",
                {}),
          1);
  AddRule(base, "gpu_allocation_ratio",
          gauge("acmetrace_gpu_allocation_ratio", "allocated GPUs / GPUs of the cluster", {}), 1);
  // Telemetry over the base window's samples.
  const L stat{"stat"};
  // The percent fields as ratios: process's key, the metric, the release's field.
  struct PercentField {
    const char* key;
    const char* metric;
    const char* field;
  };
  const PercentField percent_fields[] = {
      {"gpu_util_percent", "acmetrace_cluster_gpu_util_ratio", "GPU_UTIL"},
      {"sm_active_percent", "acmetrace_cluster_sm_active_ratio", "SM_ACTIVE"},
      {"sm_occupancy_percent", "acmetrace_cluster_sm_occupancy_ratio", "SM_OCCUPANCY"},
      {"tensor_active_percent", "acmetrace_cluster_tensor_active_ratio", "PIPE_TENSOR_ACTIVE"},
      {"dram_active_percent", "acmetrace_cluster_dram_active_ratio", "DRAM_ACTIVE"},
  };
  for (const PercentField& f : percent_fields) {
    const std::string help = std::string(f.field) + " over the last minute's GPU samples (0..1)";
    AddRule(base, f.key, gauge(f.metric, help.c_str(), stat), kPercent, stat);
  }
  AddRule(base, "fb_used_mib",
          gauge("acmetrace_cluster_fb_used_bytes", "framebuffer used per GPU over the last minute's samples", stat),
          kMiB, stat);
  AddRule(base, "gpus_idle",
          gauge("acmetrace_cluster_gpus_idle", "GPUs with GPU_UTIL 0 (mean over the last minute's sample times)", {}),
          1);
  AddRule(base, "gpus_reporting",
          gauge("acmetrace_cluster_gpus_reporting", "GPUs with a GPU_UTIL sample (mean over sample times)", {}), 1);
  AddRule(base, "gpu_power_watts",
          gauge("acmetrace_cluster_gpu_power_watts", "POWER_USAGE summed over the cluster's GPUs", {}), 1);
  AddRule(base, "gpu_temp_max_celsius",
          gauge("acmetrace_cluster_gpu_temp_max_celsius", "hottest GPU_TEMP sample of the last minute", {}), 1);
  AddRule(base, "node_cpu_util_percent",
          gauge("acmetrace_cluster_cpu_util_ratio", "mean NODE_CPU_UTILIZATION over node samples (0..1)", {}),
          kPercent, {}, "mean");
  AddRule(base, "node_memory_util_percent",
          gauge("acmetrace_cluster_memory_util_ratio", "mean NODE_MEMORY_UTILIZATION over node samples (0..1)", {}),
          kPercent, {}, "mean");
  AddRule(base, "ib_send",
          gauge("acmetrace_cluster_ib_send_bytes_per_second", "NODE_IB_SEND summed over the cluster's nodes", {}),
          options.ib_bytes_per_raw_unit);
  AddRule(base, "ib_receive",
          gauge("acmetrace_cluster_ib_receive_bytes_per_second", "NODE_IB_RECEIVE summed over the cluster's nodes",
                {}),
          options.ib_bytes_per_raw_unit);
  AddRule(base, "ipmi_power_watts",
          gauge("acmetrace_ipmi_power_watts", "mean IPMI Sys_Total_Power of each server model", {"model"}), 1,
          {"model"});
  // The last hour.
  AddRule(hour, "job_queue_seconds",
          summary("acmetrace_job_queue_seconds", "queue time quantiles of GPU jobs that started in the last hour"),
          1, {"q"});
  AddRule(hour, "job_duration_seconds",
          summary("acmetrace_job_duration_seconds", "run time quantiles of GPU jobs that ended in the last hour"),
          1, {"q"});
  AddRule(hour, "job_failure_ratio",
          gauge("acmetrace_job_failure_ratio",
                "share of GPU jobs ending in the last hour that ended FAILED, TIMEOUT or NODE_FAIL", {}),
          1);
  AddRule(hour, "gpu_jobs_finished",
          gauge("acmetrace_gpu_jobs_finished_last_hour", "GPU jobs that ended in the last hour", {}), 1);
}

void WindowMapping::CreateKnownCounters(std::string_view cluster) {
  const std::string c(cluster);
  auto zero = [&](const char* key_name, const std::vector<std::string>& values) {
    const FamilyId family = FamilyOf(key_name, options_.base_window_s);
    if (family < 0) return;
    std::vector<std::string> all{c};
    all.insert(all.end(), values.begin(), values.end());
    store_.Add(family, store_.MakeLabels(family, all), 0.0, cluster, 0);  // 0 if new, unchanged if not
  };
  zero("records_total", {});
  zero("late_records_total", {});
  for (std::string_view type : kJobTypes) {
    const std::string t(type);
    zero("jobs_submitted_total", {t});
    zero("jobs_started_total", {t});
    for (std::string_view state : kJobStates) {
      const std::string st(state);
      zero("job_gpu_seconds_total", {t, st});
      zero("jobs_finished_total", {"gpu", t, st});
      zero("jobs_finished_total", {"cpu", t, st});
    }
  }
}

void WindowMapping::AddRule(int64_t window_s, const char* key_name, FamilySpec spec, double scale,
                            std::vector<std::string> key_labels, std::string only_stat) {
  const bool gauge = spec.type == SeriesType::kGauge;
  Rule rule;
  // GPU activity ratios cannot exceed 1; the processors' quantile sketches answer within 1 %
  // relative error, so a p95 of 100 % may come back as 100.5 %.
  const std::string key(key_name);
  if (key == "gpu_util_percent" || key == "sm_active_percent" || key == "sm_occupancy_percent" ||
      key == "tensor_active_percent" || key == "dram_active_percent") {
    rule.max_value = 1.0;
  }
  rule.family = store_.AddFamily(std::move(spec));
  rule.scale = scale;
  rule.key_labels = std::move(key_labels);
  rule.only_stat = std::move(only_stat);
  if (gauge) replaced_[window_s].push_back(rule.family);
  rules_[std::to_string(window_s) + "/" + key_name] = std::move(rule);
}

FamilyId WindowMapping::FamilyOf(std::string_view name, int64_t window_s) const {
  auto it = rules_.find(std::to_string(window_s) + "/" + std::string(name));
  return it == rules_.end() ? -1 : it->second.family;
}

void WindowMapping::Apply(const core::MetricsWindow& window) {
  auto replaced = replaced_.find(window.window_s);
  if (replaced == replaced_.end()) return;  // a view nothing is taken from
  const std::string prefix = std::to_string(window.window_s) + "/";
  MetricKey key;
  for (const auto& [text, value] : window.metrics) {
    if (!ParseMetricKey(text, key)) {
      ++unmapped_;
      continue;
    }
    lookup_.assign(prefix);
    lookup_.append(key.name);
    auto it = rules_.find(lookup_);
    if (it == rules_.end()) {
      ++unmapped_;
      continue;
    }
    const Rule& rule = it->second;
    if (!rule.only_stat.empty()) {
      bool keep = false;
      for (const auto& [l, v] : key.labels) keep = keep || (l == "stat" && v == rule.only_stat);
      if (!keep) continue;
    }
    values_.assign(1, window.cluster);
    for (const std::string& want : rule.key_labels) {
      std::string_view found;
      for (const auto& [l, v] : key.labels) {
        if (l == want) found = v;
      }
      values_.emplace_back(found);
    }
    double v = value * rule.scale;
    if (v > rule.max_value) v = rule.max_value;
    store_.Set(rule.family, store_.MakeLabels(rule.family, values_), v, window.cluster, window.end_ms);
  }
  // What the window no longer has (a type with nothing running, a quantile without input) goes.
  for (FamilyId family : replaced->second) store_.RemoveSetBefore(family, window.cluster, window.end_ms);
}

}  // namespace acmetrace::exporters

// ClusterMetrics: per-window aggregates, the job table and the metric names of acme.metrics.
#include "acmetrace/processors/cluster_metrics.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "acmetrace/processors/state_codec.h"

namespace acmetrace::processors {
namespace {

enum class GpuField { kQuantity, kPower, kTemp, kOther };

struct GpuFieldInfo {
  GpuField field = GpuField::kOther;
  Quantity quantity = Quantity::kGpuUtil;
  bool fraction = false;  // a fraction 0..1 in the release's raw files
};

GpuFieldInfo ClassifyGpu(std::string_view name) {
  if (name == "GPU_UTIL") return {GpuField::kQuantity, Quantity::kGpuUtil, false};
  if (name == "SM_ACTIVE") return {GpuField::kQuantity, Quantity::kSmActive, true};
  if (name == "SM_OCCUPANCY") return {GpuField::kQuantity, Quantity::kSmOccupancy, true};
  if (name == "PIPE_TENSOR_ACTIVE") return {GpuField::kQuantity, Quantity::kTensorActive, true};
  if (name == "DRAM_ACTIVE") return {GpuField::kQuantity, Quantity::kDramActive, true};
  if (name == "FB_USED") return {GpuField::kQuantity, Quantity::kFbUsed, false};
  if (name == "POWER_USAGE") return {GpuField::kPower, Quantity::kGpuUtil, false};
  if (name == "GPU_TEMP") return {GpuField::kTemp, Quantity::kGpuUtil, false};
  return {};
}

// GpuMetric names are interned (one address per name): classified once per name and thread, then
// found by address instead of by up to eight string compares per metric of every record.
GpuFieldInfo ClassifyInterned(std::string_view name) {
  thread_local std::vector<std::pair<const char*, GpuFieldInfo>> seen;
  for (const auto& [data, info] : seen) {
    if (data == name.data()) return info;
  }
  const GpuFieldInfo info = ClassifyGpu(name);
  if (seen.size() < 256) seen.emplace_back(name.data(), info);
  return info;
}

std::string TypeLabel(std::string_view type) {
  std::string s = "type=";
  s += type.empty() ? std::string_view("unknown") : type;
  return s;
}

std::string Labeled(std::string_view name, std::string_view labels) {
  std::string s(name);
  s += '{';
  s += labels;
  s += '}';
  return s;
}

std::string QuantileLabel(std::string_view name, std::string_view q) { return Labeled(name, "q=" + std::string(q)); }

template <typename V>
void MergeMap(std::map<std::string, V>& into, const std::map<std::string, V>& from) {
  for (const auto& [k, v] : from) into[k] += v;
}

}  // namespace

std::string_view QuantityMetricName(Quantity q) {
  switch (q) {
    case Quantity::kGpuUtil: return "gpu_util_percent";
    case Quantity::kSmActive: return "sm_active_percent";
    case Quantity::kSmOccupancy: return "sm_occupancy_percent";
    case Quantity::kTensorActive: return "tensor_active_percent";
    case Quantity::kDramActive: return "dram_active_percent";
    case Quantity::kFbUsed: return "fb_used_mib";
    case Quantity::kNodeCpu: return "node_cpu_util_percent";
    case Quantity::kNodeMemory: return "node_memory_util_percent";
  }
  return "unknown";
}

bool IsFailedState(std::string_view state) {
  return state == "FAILED" || state == "TIMEOUT" || state == "NODE_FAIL";
}

void Distribution::Add(double value) {
  ++count;
  sum += value;
  sketch.Add(value);
}

void Distribution::Merge(const Distribution& other) {
  count += other.count;
  sum += other.sum;
  sketch.Merge(other.sketch);
}

void TimeTotals::Merge(const TimeTotals& o) {
  gpus_idle += o.gpus_idle;
  gpus_reporting += o.gpus_reporting;
  gpu_power_w += o.gpu_power_w;
  power_samples += o.power_samples;
  ib_send += o.ib_send;
  ib_send_samples += o.ib_send_samples;
  ib_receive += o.ib_receive;
  ib_receive_samples += o.ib_receive_samples;
}

WindowAggregate::WindowAggregate(double accuracy) : queue_s(accuracy), duration_s(accuracy) {
  quantities.fill(Distribution(accuracy));
}

void WindowAggregate::Merge(const WindowAggregate& o, bool with_sketches) {
  records += o.records;
  late_records += o.late_records;
  MergeMap(submitted, o.submitted);
  MergeMap(started, o.started);
  MergeMap(finished, o.finished);
  MergeMap(gpu_seconds, o.gpu_seconds);
  gpu_jobs_finished += o.gpu_jobs_finished;
  gpu_jobs_failed += o.gpu_jobs_failed;
  if (with_sketches) {
    queue_s.Merge(o.queue_s);
    duration_s.Merge(o.duration_s);
  }
  for (int i = 0; i < kQuantityCount; ++i) {
    quantities[i].count += o.quantities[i].count;
    quantities[i].sum += o.quantities[i].sum;
    if (with_sketches) quantities[i].sketch.Merge(o.quantities[i].sketch);
  }
  for (const auto& [t, totals] : o.per_time) per_time[t].Merge(totals);
  if (core::IsSample(o.gpu_temp_max) && !(gpu_temp_max >= o.gpu_temp_max)) gpu_temp_max = o.gpu_temp_max;
  for (const auto& [model, v] : o.ipmi_power) {
    auto& mine = ipmi_power[model];
    mine.first += v.first;
    mine.second += v.second;
  }
}

void WindowAggregate::Save(StateWriter& out) const { out(*this); }

bool WindowAggregate::Load(StateReader& in, double accuracy) {
  *this = WindowAggregate(accuracy);
  in(*this);
  return in.ok();
}

ClusterMetrics::ClusterMetrics(std::string cluster, const ProcessOptions& options)
    : cluster_(std::move(cluster)),
      options_(options),
      percent_scale_(options.units == TelemetryUnits::kRaw ? 100.0 : 1.0),
      open_(options.quantile_accuracy) {
  rolling_.assign(options_.windows_s.size() > 0 ? options_.windows_s.size() - 1 : 0,
                  RollingSketches(options_.quantile_accuracy));
}

ClusterMetrics::RollingSketches::RollingSketches(double accuracy) : queue_s(accuracy), duration_s(accuracy) {
  quantities.fill(QuantileSketch(accuracy));
}

void ClusterMetrics::RollingSketches::Add(const WindowAggregate& w) {
  for (int i = 0; i < kQuantityCount; ++i) quantities[i].Merge(w.quantities[i].sketch);
  queue_s.Merge(w.queue_s);
  duration_s.Merge(w.duration_s);
}

void ClusterMetrics::RollingSketches::Subtract(const WindowAggregate& w) {
  for (int i = 0; i < kQuantityCount; ++i) quantities[i].Subtract(w.quantities[i].sketch);
  queue_s.Subtract(w.queue_s);
  duration_s.Subtract(w.duration_s);
}

void ClusterMetrics::AdvanceRolling(int64_t end_ms) {
  // closed_ holds every base window that any view still reaches; each view takes the new ones in
  // and lets the ones before its start go.
  for (size_t v = 0; v < rolling_.size(); ++v) {
    RollingSketches& r = rolling_[v];
    const int64_t view_start = end_ms - options_.windows_s[v + 1] * 1000;
    const int64_t newest = r.starts.empty() ? std::numeric_limits<int64_t>::min() : r.starts.back();
    for (auto it = closed_.upper_bound(newest); it != closed_.end() && it->first < end_ms; ++it) {
      if (it->first < view_start) continue;
      r.Add(it->second);
      r.starts.push_back(it->first);
    }
    size_t gone = 0;
    while (gone < r.starts.size() && r.starts[gone] < view_start) {
      r.Subtract(closed_.at(r.starts[gone]));
      ++gone;
    }
    r.starts.erase(r.starts.begin(), r.starts.begin() + static_cast<std::ptrdiff_t>(gone));
  }
}

WindowAggregate& ClusterMetrics::Open(int64_t start_ms) {
  if (!has_open_ || open_start_ms_ != start_ms) {
    // The stream processor applies one window at a time and closes it before the next.
    open_ = WindowAggregate(options_.quantile_accuracy);
    open_start_ms_ = start_ms;
    has_open_ = true;
  }
  return open_;
}

void ClusterMetrics::Apply(const core::Record& record, int64_t window_start_ms, bool late) {
  WindowAggregate& w = Open(window_start_ms);
  ++w.records;
  ++records_total_;
  if (late) {
    ++w.late_records;
    ++late_total_;
  }
  if (const auto* job = std::get_if<core::JobEvent>(&record)) {
    ApplyJob(*job, w);
  } else if (const auto* util = std::get_if<core::UtilSample>(&record)) {
    ApplyUtil(*util, w);
  } else if (const auto* power = std::get_if<core::PowerSample>(&record)) {
    ApplyPower(*power, w);
  }
}

void ClusterMetrics::AddJobToGauges(const JobInFlight& job, int sign) {
  const std::string label = TypeLabel(job.type);
  if (job.running) {
    running_[label] += sign;
    gpus_allocated_ += sign * job.gpu_num;
  } else {
    pending_[label] += sign;
    gpus_pending_ += sign * job.gpu_num;
  }
}

void ClusterMetrics::ApplyJob(const core::JobEvent& e, WindowAggregate& w) {
  const std::string type = TypeLabel(e.type);
  // Every type seen gets a running and a pending gauge, zero once its jobs are done.
  running_.try_emplace(type, 0);
  pending_.try_emplace(type, 0);
  const bool gpu_job = e.gpu_num > 0;
  switch (e.event) {
    case core::JobEventKind::kSubmit: {
      ++w.submitted[type];
      ++submitted_total_[type];
      auto [it, inserted] = jobs_.try_emplace(e.job_id, JobInFlight{e.type, e.gpu_num, false});
      if (inserted) AddJobToGauges(it->second, +1);
      break;
    }
    case core::JobEventKind::kStart: {
      ++w.started[type];
      ++started_total_[type];
      if (gpu_job && core::IsSample(e.queue_s)) w.queue_s.Add(e.queue_s);
      auto it = jobs_.find(e.job_id);
      if (it == jobs_.end()) {
        // Submitted before the input began (e.g. replay --from): running from now on.
        it = jobs_.emplace(e.job_id, JobInFlight{e.type, e.gpu_num, true}).first;
        AddJobToGauges(it->second, +1);
      } else if (!it->second.running) {
        AddJobToGauges(it->second, -1);
        it->second.running = true;
        AddJobToGauges(it->second, +1);
      }
      break;
    }
    case core::JobEventKind::kEnd: {
      std::string labels = gpu_job ? "kind=gpu," : "kind=cpu,";
      labels += type;
      labels += ",state=";
      labels += e.state;
      ++w.finished[labels];
      ++finished_total_[labels];
      if (core::IsSample(e.gpu_time)) {
        std::string gpu_labels = type + ",state=" + e.state;
        w.gpu_seconds[gpu_labels] += e.gpu_time;
        gpu_seconds_total_[gpu_labels] += e.gpu_time;
      }
      if (gpu_job) {
        ++w.gpu_jobs_finished;
        if (IsFailedState(e.state)) ++w.gpu_jobs_failed;
        if (core::IsSample(e.duration_s)) w.duration_s.Add(e.duration_s);
      }
      if (auto it = jobs_.find(e.job_id); it != jobs_.end()) {
        AddJobToGauges(it->second, -1);
        jobs_.erase(it);
      }
      break;
    }
  }
}

void ClusterMetrics::ApplyUtil(const core::UtilSample& s, WindowAggregate& w) {
  int64_t gpus = 0;  // the node's GPUs with a sample in this record
  for (const core::GpuMetric& m : s.gpu) {
    for (size_t i = m.values.size(); static_cast<int64_t>(i) > gpus; --i) {
      if (core::IsSample(m.values[i - 1])) {
        gpus = static_cast<int64_t>(i);
        break;
      }
    }
  }
  if (gpus > 0) {
    int64_t& known = gpus_seen_per_node_[s.node];
    if (gpus > known) {
      gpus_seen_ += gpus - known;
      known = gpus;
    }
  }
  TimeTotals* totals = nullptr;
  auto at_time = [&]() -> TimeTotals& {
    if (totals == nullptr) totals = &w.per_time[s.ts_ms];
    return *totals;
  };
  for (const core::GpuMetric& m : s.gpu) {
    const GpuFieldInfo info = ClassifyInterned(m.name);
    switch (info.field) {
      case GpuField::kQuantity: {
        Distribution& d = w.quantities[static_cast<int>(info.quantity)];
        const double scale = info.fraction ? percent_scale_ : 1.0;
        for (double v : m.values) {
          if (!core::IsSample(v)) continue;
          d.Add(v * scale);
          if (info.quantity == Quantity::kGpuUtil) {
            TimeTotals& t = at_time();
            t.gpus_reporting += 1;
            if (v == 0) t.gpus_idle += 1;
          }
        }
        break;
      }
      case GpuField::kPower:
        for (double v : m.values) {
          if (!core::IsSample(v)) continue;
          TimeTotals& t = at_time();
          t.gpu_power_w += v;
          t.power_samples += 1;
        }
        break;
      case GpuField::kTemp:
        for (double v : m.values) {
          if (core::IsSample(v) && !(w.gpu_temp_max >= v)) w.gpu_temp_max = v;
        }
        break;
      case GpuField::kOther: break;
    }
  }
  for (const core::HostMetric& h : s.host) {
    if (!core::IsSample(h.value)) continue;
    if (h.name == "NODE_CPU_UTILIZATION") {
      w.quantities[static_cast<int>(Quantity::kNodeCpu)].Add(h.value * percent_scale_);
    } else if (h.name == "NODE_MEMORY_UTILIZATION") {
      w.quantities[static_cast<int>(Quantity::kNodeMemory)].Add(h.value * percent_scale_);
    } else if (h.name == "NODE_IB_SEND") {
      TimeTotals& t = at_time();
      t.ib_send += h.value;
      t.ib_send_samples += 1;
    } else if (h.name == "NODE_IB_RECEIVE") {
      TimeTotals& t = at_time();
      t.ib_receive += h.value;
      t.ib_receive_samples += 1;
    }
  }
}

void ClusterMetrics::ApplyPower(const core::PowerSample& p, WindowAggregate& w) {
  for (const auto& [name, value] : p.fields) {
    if (name != "Sys_Total_Power" || !core::IsSample(value)) continue;
    auto& v = w.ipmi_power[p.model];
    v.first += value;
    v.second += 1;
  }
}

void ClusterMetrics::AppendView(const WindowAggregate& a, std::map<std::string, double>& m) const {
  m["records"] = static_cast<double>(a.records);
  m["late_records"] = static_cast<double>(a.late_records);
  for (const auto& [labels, n] : a.submitted) m[Labeled("jobs_submitted", labels)] = static_cast<double>(n);
  for (const auto& [labels, n] : a.started) m[Labeled("jobs_started", labels)] = static_cast<double>(n);
  for (const auto& [labels, n] : a.finished) m[Labeled("jobs_finished", labels)] = static_cast<double>(n);
  for (const auto& [labels, v] : a.gpu_seconds) m[Labeled("job_gpu_seconds", labels)] = v;
  static constexpr std::pair<const char*, double> kJobQuantiles[] = {{"0.5", 0.5}, {"0.95", 0.95}, {"0.99", 0.99}};
  if (!a.queue_s.empty()) {
    for (const auto& [text, q] : kJobQuantiles) m[QuantileLabel("job_queue_seconds", text)] = a.queue_s.Quantile(q);
  }
  if (!a.duration_s.empty()) {
    for (const auto& [text, q] : kJobQuantiles) m[QuantileLabel("job_duration_seconds", text)] = a.duration_s.Quantile(q);
  }
  if (a.gpu_jobs_finished > 0) {
    m["gpu_jobs_finished"] = static_cast<double>(a.gpu_jobs_finished);
    m["job_failure_ratio"] = static_cast<double>(a.gpu_jobs_failed) / static_cast<double>(a.gpu_jobs_finished);
  }
  for (int i = 0; i < kQuantityCount; ++i) {
    const Distribution& d = a.quantities[i];
    if (d.count == 0) continue;
    const std::string_view name = QuantityMetricName(static_cast<Quantity>(i));
    m[Labeled(name, "stat=mean")] = d.sum / static_cast<double>(d.count);
    m[Labeled(name, "stat=p50")] = d.sketch.Quantile(0.5);
    m[Labeled(name, "stat=p95")] = d.sketch.Quantile(0.95);
  }
  // Cluster totals: the mean, over the window's sample times that had the quantity, of the sum over nodes.
  double idle = 0, reporting = 0, util_times = 0, power = 0, power_times = 0;
  double send = 0, send_times = 0, receive = 0, receive_times = 0;
  for (const auto& [t, v] : a.per_time) {
    if (v.gpus_reporting > 0) {
      idle += v.gpus_idle;
      reporting += v.gpus_reporting;
      util_times += 1;
    }
    if (v.power_samples > 0) {
      power += v.gpu_power_w;
      power_times += 1;
    }
    if (v.ib_send_samples > 0) {
      send += v.ib_send;
      send_times += 1;
    }
    if (v.ib_receive_samples > 0) {
      receive += v.ib_receive;
      receive_times += 1;
    }
  }
  if (util_times > 0) {
    m["gpus_idle"] = idle / util_times;
    m["gpus_reporting"] = reporting / util_times;
  }
  if (power_times > 0) m["gpu_power_watts"] = power / power_times;
  if (send_times > 0) m["ib_send"] = send / send_times;
  if (receive_times > 0) m["ib_receive"] = receive / receive_times;
  if (core::IsSample(a.gpu_temp_max)) m["gpu_temp_max_celsius"] = a.gpu_temp_max;
  for (const auto& [model, v] : a.ipmi_power) {
    if (v.second > 0) m[Labeled("ipmi_power_watts", "model=" + model)] = v.first / static_cast<double>(v.second);
  }
}

void ClusterMetrics::AppendGaugesAndTotals(std::map<std::string, double>& m) const {
  for (const auto& [labels, n] : running_) m[Labeled("jobs_running", labels)] = static_cast<double>(n);
  for (const auto& [labels, n] : pending_) m[Labeled("jobs_pending", labels)] = static_cast<double>(n);
  m["gpus_allocated"] = static_cast<double>(gpus_allocated_);
  m["gpus_pending"] = static_cast<double>(gpus_pending_);
  // The GPUs the telemetry showed (a scaled or partial data set is smaller than the published
  // cluster), else the configured (published) size.
  int64_t capacity = gpus_seen_;
  if (capacity == 0) {
    if (auto it = options_.capacity_gpus.find(cluster_); it != options_.capacity_gpus.end()) capacity = it->second;
  }
  if (capacity > 0) {
    m["gpus_total"] = static_cast<double>(capacity);
    m["gpu_allocation_ratio"] = static_cast<double>(gpus_allocated_) / static_cast<double>(capacity);
  }
  for (const auto& [labels, n] : submitted_total_) m[Labeled("jobs_submitted_total", labels)] = static_cast<double>(n);
  for (const auto& [labels, n] : started_total_) m[Labeled("jobs_started_total", labels)] = static_cast<double>(n);
  for (const auto& [labels, n] : finished_total_) m[Labeled("jobs_finished_total", labels)] = static_cast<double>(n);
  for (const auto& [labels, v] : gpu_seconds_total_) m[Labeled("job_gpu_seconds_total", labels)] = v;
  m["records_total"] = static_cast<double>(records_total_);
  m["late_records_total"] = static_cast<double>(late_total_);
}

void ClusterMetrics::CloseWindow(int64_t start_ms, std::vector<core::MetricsWindow>& out) {
  const int64_t base_ms = options_.base_window_ms();
  const int64_t end_ms = start_ms + base_ms;
  closed_.insert_or_assign(start_ms, has_open_ && open_start_ms_ == start_ms ? std::move(open_)
                                                                              : WindowAggregate(options_.quantile_accuracy));
  has_open_ = false;
  AdvanceRolling(end_ms);
  // Forget base windows that no view reaches any more (the views let go of them above).
  while (!closed_.empty() && closed_.begin()->first < end_ms - options_.longest_window_ms()) closed_.erase(closed_.begin());

  for (size_t i = 0; i < options_.windows_s.size(); ++i) {
    const int64_t window_ms = options_.windows_s[i] * 1000;
    core::MetricsWindow mw;
    mw.cluster = cluster_;
    mw.window_s = options_.windows_s[i];
    mw.start_ms = end_ms - window_ms;
    mw.end_ms = end_ms;
    mw.ts_ms = end_ms;
    std::map<std::string, double> m;
    if (i == 0) {
      AppendView(closed_.at(start_ms), m);
      AppendGaugesAndTotals(m);
    } else {
      WindowAggregate view(options_.quantile_accuracy);
      for (auto it = closed_.lower_bound(mw.start_ms); it != closed_.end() && it->first < end_ms; ++it) {
        view.Merge(it->second, /*with_sketches=*/false);
      }
      const RollingSketches& r = rolling_[i - 1];
      view.queue_s = r.queue_s;
      view.duration_s = r.duration_s;
      for (int q = 0; q < kQuantityCount; ++q) view.quantities[q].sketch = r.quantities[q];
      AppendView(view, m);
    }
    mw.metrics.assign(m.begin(), m.end());
    out.push_back(std::move(mw));
  }
}

template <class Io, class Self>
void ClusterMetrics::Fields(Io& io, Self& m) {
  // The open window is not saved: a snapshot is taken between windows.
  if constexpr (Io::kReading) {
    std::string cluster;
    io(cluster);
    if (cluster != m.cluster_) return io.Fail();  // another cluster's metrics: leave these alone
  } else {
    io(m.cluster_);
  }
  io(m.closed_, m.jobs_, m.running_, m.pending_, m.gpus_allocated_, m.gpus_pending_, m.submitted_total_,
     m.started_total_, m.finished_total_, m.gpu_seconds_total_, m.records_total_, m.late_total_);
}

void ClusterMetrics::Save(StateWriter& out) const { Fields(out, *this); }

bool ClusterMetrics::Load(StateReader& in) {
  Fields(in, *this);
  // Not in this part: the processor's snapshot carries the capacity after the detectors (version 3;
  // a version 2 snapshot learns it again from the telemetry after the restore).
  gpus_seen_per_node_.clear();
  gpus_seen_ = 0;
  has_open_ = false;
  rolling_.assign(rolling_.size(), RollingSketches(options_.quantile_accuracy));
  if (!closed_.empty()) AdvanceRolling(closed_.rbegin()->first + options_.base_window_ms());
  return in.ok();
}

}  // namespace acmetrace::processors

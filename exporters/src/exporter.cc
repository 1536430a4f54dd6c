// Exporter: dispatches records to the mapping, the anomaly families and the persona.
#include "acmetrace/exporters/exporter.h"

#include <cmath>
#include <variant>

#include "acmetrace/core/record_json.h"
#include "acmetrace/exporters/process_metrics.h"

namespace acmetrace::exporters {
namespace {

StoreOptions StoreOptionsOf(const ExportOptions& o) {
  return StoreOptions{o.series_ttl_ms, o.anomaly_ttl_ms, o.max_series_per_metric};
}

std::string_view ClusterOf(const core::Record& record) {
  return std::visit([](const auto& r) -> std::string_view { return r.cluster; }, record);
}

// The readers' kinds of acmetrace_input_errors_total (producers/src/*: kKind; "record" for a
// malformed record of a topic or of stdin).
constexpr std::string_view kInputErrorKinds[] = {"job_trace", "utilization", "ipmi", "record"};

}  // namespace

Exporter::Exporter(ExportOptions options, const core::InputErrors* errors, core::Clock* wall_clock)
    : options_(std::move(options)),
      errors_(errors),
      own_clock_(wall_clock == nullptr ? std::make_unique<core::SteadyClock>() : nullptr),
      wall_clock_(wall_clock == nullptr ? own_clock_.get() : wall_clock),
      store_(StoreOptionsOf(options_)),
      mapping_(options_, store_),
      persona_(options_, store_) {
  anomaly_active_ = store_.AddFamily(FamilySpec{"acmetrace_anomaly_active",
                                                "1 while an anomaly flag is open; a closed flag stays 1 until shown for two scrape intervals, then 0 until two "
                                                "scrape intervals after its close, then goes",
                                                SeriesType::kGauge,
                                                {"cluster", "kind", "subject"},
                                                Expiry::kAnomaly,
                                                false});
  anomalies_total_ = store_.AddFamily(FamilySpec{
      "acmetrace_anomalies_total", "anomaly flags opened", SeriesType::kCounter, {"cluster", "kind"}, Expiry::kNever,
      false});
  records_total_ = store_.AddFamily(FamilySpec{"acmetrace_records_total",
                                               "records through each stage (replay, process, export) by topic",
                                               SeriesType::kCounter,
                                               {"stage", "topic"},
                                               Expiry::kNever,
                                               false});
  input_errors_total_ = store_.AddFamily(FamilySpec{"acmetrace_input_errors_total",
                                                    "malformed input rows or records (each reported on stderr)",
                                                    SeriesType::kCounter,
                                                    {"cluster", "kind"},
                                                    Expiry::kNever,
                                                    false});
  trace_time_ = store_.AddFamily(FamilySpec{"acmetrace_replay_trace_time_seconds",
                                            "trace (event) time of the newest record of the cluster, unix seconds",
                                            SeriesType::kGauge,
                                            {"cluster"},
                                            Expiry::kNever,
                                            false});
  replay_speed_ = store_.AddFamily(FamilySpec{"acmetrace_replay_speed",
                                              "trace seconds per wall second of the replay; 0 = max (unpaced)",
                                              SeriesType::kGauge,
                                              {},
                                              Expiry::kNever,
                                              false});
  replay_lag_ = store_.AddFamily(FamilySpec{"acmetrace_replay_lag_seconds",
                                            "how far the replay is behind its schedule (0 when unpaced)",
                                            SeriesType::kGauge,
                                            {},
                                            Expiry::kNever,
                                            false});
}

void Exporter::Apply(const core::Record& record) {
  std::lock_guard<std::mutex> lock(apply_mutex_);
  const std::string_view cluster = ClusterOf(record);
  const int64_t ts = core::TimestampMsOf(record);
  if (const auto* w = std::get_if<core::MetricsWindow>(&record)) {
    mapping_.Apply(*w);
    store_.AdvanceClock(cluster, w->end_ms, SeriesStore::ClockKind::kWindows);
  } else if (const auto* a = std::get_if<core::AnomalyEvent>(&record)) {
    ApplyAnomaly(*a);
  } else if (const auto* u = std::get_if<core::UtilSample>(&record)) {
    persona_.Apply(*u);
  }
  if (!cluster.empty() && !clusters_.contains(cluster)) NoteCluster(cluster);
  CountRecords("export", core::TopicOf(record), 1);
  NoteTraceTime(cluster, ts);
  // The persona's series expire on the cluster's telemetry clock (a node expires when its cluster's
  // telemetry moved on without it), the windows' on the window clock, each moved by its own stream.
  if (std::holds_alternative<core::UtilSample>(record)) {
    auto it = newest_util_ms_.find(cluster);
    if (it == newest_util_ms_.end()) it = newest_util_ms_.emplace(std::string(cluster), ts).first;
    it->second = std::max(it->second, ts);
    if (const int64_t clock = std::min(std::max(it->second, telemetry_reached_ms_), telemetry_bound_ms_);
        clock != INT64_MIN) {
      store_.AdvanceClock(cluster, clock, SeriesStore::ClockKind::kTelemetry);
    }
  }
  applied_.store(true, std::memory_order_relaxed);
}

void Exporter::AdvanceTelemetryBound(int64_t ts_ms) {
  std::lock_guard<std::mutex> lock(apply_mutex_);
  if (ts_ms <= telemetry_bound_ms_ && telemetry_bound_ms_ != INT64_MAX) return;
  telemetry_bound_ms_ = ts_ms;
  AdvanceTelemetryClocks();
}

void Exporter::NoteTelemetryReached(int64_t ts_ms) {
  std::lock_guard<std::mutex> lock(apply_mutex_);
  if (ts_ms <= telemetry_reached_ms_) return;
  telemetry_reached_ms_ = ts_ms;
  AdvanceTelemetryClocks();
}

void Exporter::AdvanceTelemetryClocks() {
  if (telemetry_bound_ms_ == INT64_MIN) return;
  for (const auto& [cluster, newest] : newest_util_ms_) {
    const int64_t clock = std::min(std::max(newest, telemetry_reached_ms_), telemetry_bound_ms_);
    if (clock != INT64_MIN) store_.AdvanceClock(cluster, clock, SeriesStore::ClockKind::kTelemetry);
  }
}

void Exporter::NoteCluster(std::string_view cluster) {
  clusters_.emplace(cluster);
  // Every known label set at 0 from the start, so increase() sees the first event and a panel on
  // them shows 0 rather than nothing.
  for (const std::string& kind : options_.anomaly_kinds) {
    store_.Add(anomalies_total_, store_.MakeLabels(anomalies_total_, {std::string(cluster), kind}), 0.0, cluster, 0);
  }
  if (errors_ != nullptr) {
    for (std::string_view kind : kInputErrorKinds) {
      store_.Add(input_errors_total_, store_.MakeLabels(input_errors_total_, {std::string(cluster), std::string(kind)}),
                 0.0, cluster, 0);
    }
  }
  mapping_.CreateKnownCounters(cluster);
}

void Exporter::ApplyAnomaly(const core::AnomalyEvent& a) {
  const SeriesLabels active = store_.MakeLabels(anomaly_active_, {a.cluster, a.kind, a.subject});
  const int64_t now = wall_clock_->NowMs();
  auto it = flags_.find(active.key);
  if (a.open) {
    // A repeated open (at-least-once delivery after a processor restart) counts once; a flag
    // expired by export.anomaly_ttl_s counts again.
    const bool was_open = it != flags_.end() && it->second.open && !std::isnan(store_.Get(anomaly_active_, active.key));
    if (!was_open) {
      store_.Add(anomalies_total_, store_.MakeLabels(anomalies_total_, {a.cluster, a.kind}), 1.0, a.cluster, a.ts_ms);
    }
    // flags_ holds open flags and closed ones still shown: an entry that is not open is shown closed.
    const bool reopened = it != flags_.end() && !it->second.open;
    if (it == flags_.end()) it = flags_.emplace(active.key, FlagView{}).first;
    FlagView& f = it->second;
    const bool closed_showing_one = reopened && !f.zero;
    if (reopened) --closed_flags_;
    // A flag reopened while its close still shows 1 has been 1 all along; otherwise 1 starts now.
    if (!was_open && !closed_showing_one) f.shown_since_ms = now;
    f.open = true;
    f.zero = false;
    f.closed_at_ms = 0;
    store_.Set(anomaly_active_, active, 1.0, a.cluster, a.ts_ms);
    store_.SetScrapeOnly(anomaly_active_, active.key, false);
  } else {
    if (it == flags_.end() || !it->second.open) return;  // a close without its open (or repeated)
    FlagView& f = it->second;
    f.open = false;
    f.closed_at_ms = now;
    ++closed_flags_;
    // Not state any more (--metrics-out leaves it out), but scrapers still see it.
    store_.SetScrapeOnly(anomaly_active_, active.key, true);
    TickLocked(now);
  }
}

void Exporter::Tick() {
  std::lock_guard<std::mutex> lock(apply_mutex_);
  TickLocked(wall_clock_->NowMs());
}

void Exporter::TickLocked(int64_t now_ms) {
  if (closed_flags_ == 0) return;
  const int64_t hold = 2 * options_.scrape_interval_ms;
  for (auto it = flags_.begin(); it != flags_.end();) {
    FlagView& f = it->second;
    if (f.open) {
      ++it;
      continue;
    }
    if (now_ms - f.closed_at_ms >= hold) {
      store_.Remove(anomaly_active_, it->first);
      --closed_flags_;
      it = flags_.erase(it);
      continue;
    }
    if (!f.zero && now_ms - f.shown_since_ms >= hold) {
      // Seen at 1 for two scrape intervals: the scrapers now see the close.
      f.zero = true;
      store_.SetValue(anomaly_active_, it->first, 0.0);
    }
    ++it;
  }
}

void Exporter::CountRecords(std::string_view stage, std::string_view topic, int64_t n) {
  std::lock_guard<std::mutex> lock(self_mutex_);
  std::string key(stage);
  key += '\x1f';
  key += topic;
  records_[key] += n;
}

void Exporter::NoteTraceTime(std::string_view cluster, int64_t ts_ms) {
  if (cluster.empty()) return;
  std::lock_guard<std::mutex> lock(self_mutex_);
  auto it = trace_time_ms_.find(cluster);
  if (it == trace_time_ms_.end()) {
    trace_time_ms_.emplace(std::string(cluster), ts_ms);
  } else if (ts_ms > it->second) {
    it->second = ts_ms;
  }
}

std::optional<int64_t> Exporter::NewestTraceTimeMs() {
  std::lock_guard<std::mutex> lock(self_mutex_);
  std::optional<int64_t> newest;
  for (const auto& [cluster, ms] : trace_time_ms_) {
    if (!newest || ms > *newest) newest = ms;
  }
  return newest;
}

void Exporter::SetReplayStatus(double speed, double lag_s) {
  store_.Set(replay_speed_, store_.MakeLabels(replay_speed_, {}), speed, "", 0);
  store_.Set(replay_lag_, store_.MakeLabels(replay_lag_, {}), lag_s, "", 0);
}

void Exporter::RefreshSelfMetrics() {
  {
    std::lock_guard<std::mutex> lock(self_mutex_);
    for (const auto& [key, n] : records_) {
      const size_t sep = key.find('\x1f');
      store_.Set(records_total_, store_.MakeLabels(records_total_, {key.substr(0, sep), key.substr(sep + 1)}),
                 static_cast<double>(n), "", 0);
    }
    for (const auto& [cluster, ms] : trace_time_ms_) {
      store_.Set(trace_time_, store_.MakeLabels(trace_time_, {cluster}), static_cast<double>(ms) / 1000.0, cluster,
                 0);
    }
  }
  if (errors_ != nullptr) {
    for (const auto& [ck, n] : errors_->counts()) {
      store_.Set(input_errors_total_, store_.MakeLabels(input_errors_total_, {ck.first, ck.second}),
                 static_cast<double>(n), ck.first, 0);
    }
  }
}

std::vector<prometheus::MetricFamily> Exporter::Collect(std::string_view target) {
  if (target.empty()) RefreshSelfMetrics();
  return store_.Collect(target);
}

std::string Exporter::Exposition(std::string_view target) { return Render(target, false); }

std::string Exporter::ScrapeExposition(std::string_view target) {
  Tick();
  std::string out = Render(target, true);
  if (target.empty()) {
    AppendBuildInfo(out);
    AppendExtraSelfMetrics(out);
    // As client_golang: a /proc that cannot be read leaves the process series out, not the scrape.
    core::Result<ProcessStats> stats = ReadProcessStats();
    if (stats.ok()) AppendProcessMetrics(out, stats.value());
  }
  return out;
}

void Exporter::ScrapeEveryTarget(std::string& cluster_view,
                                 const std::function<void(const SeriesStore::TargetSample&)>& on_target_sample) {
  Tick();
  cluster_view = Render({}, true, SeriesStore::Families::kNotPerTarget);
  AppendBuildInfo(cluster_view);
  AppendExtraSelfMetrics(cluster_view);
  store_.ForEachTargetSample(on_target_sample);
}

std::string Exporter::Render(std::string_view target, bool scrape_view, SeriesStore::Families families) {
  if (target.empty()) RefreshSelfMetrics();
  std::string out;
  // The last full rendering's size: one allocation instead of a dozen doublings of 5 MB.
  if (target.empty()) out.reserve(last_size_.load(std::memory_order_relaxed) + 4096);
  store_.AppendText(out, target, scrape_view, families);
  if (target.empty()) last_size_.store(out.size(), std::memory_order_relaxed);
  return out;
}

void Exporter::SetExtraSelfMetrics(std::function<void(std::string&)> fn) {
  std::lock_guard<std::mutex> lock(extra_mutex_);
  extra_self_metrics_ = std::move(fn);
}

void Exporter::AppendExtraSelfMetrics(std::string& out) {
  std::lock_guard<std::mutex> lock(extra_mutex_);
  if (extra_self_metrics_) extra_self_metrics_(out);
}

std::string Exporter::TargetsJson() const {
  std::string out = "[";
  bool first_group = true;
  for (const auto& [cluster, nodes] : store_.Targets()) {
    if (!first_group) out += ',';
    first_group = false;
    out += "{\"targets\":[";
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i > 0) out += ',';
      core::AppendJsonString(out, nodes[i]);
    }
    out += "],\"labels\":{\"cluster\":";
    core::AppendJsonString(out, cluster);
    out += "}}";
  }
  out += "]\n";
  return out;
}

}  // namespace acmetrace::exporters

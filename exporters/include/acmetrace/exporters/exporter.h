// Records in, Prometheus state out: the window mapping, anomalies, the dcgm-exporter persona and
// the self metrics, over one SeriesStore; exposition text without timestamps.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record.h"
#include "acmetrace/exporters/dcgm_persona.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/series_store.h"
#include "acmetrace/exporters/window_mapping.h"

namespace acmetrace::exporters {

/// The exporters' whole state. Apply from one consuming thread at a time; the counting and replay
/// setters and Collect/Exposition from any thread. Thread-safe.
class Exporter {
 public:
  /// errors, if given, is read at each scrape for acmetrace_input_errors_total (it must outlive
  /// the exporter). wall_clock (default: a steady clock of the exporter's own) times how long a
  /// closed anomaly flag stays exposed to scrapers; it must outlive the exporter.
  explicit Exporter(ExportOptions options, const core::InputErrors* errors = nullptr,
                    core::Clock* wall_clock = nullptr);

  /// Applies one record of any topic: acme.metrics windows, acme.anomalies, acme.util (persona);
  /// every record moves its cluster's event-time clock (expiry) and trace time, and counts in
  /// acmetrace_records_total{stage="export"}. A cluster's first record creates its known counter
  /// label sets at 0 (anomaly kinds, input-error kinds, job types x states).
  void Apply(const core::Record& record);
  /// Telemetry from several partitions: no acme.util record before ts_ms is still to come (the
  /// lowest of the util partitions' times). A cluster's expiry clock follows its newest util
  /// record but never passes this bound, so a partition read ahead of another cannot expire the
  /// other's nodes: expiry depends on the data, not on the order partitions arrive in. Without a
  /// call the bound is +infinity (one ordered input: a queue, stdin). Only rises.
  void AdvanceTelemetryBound(int64_t ts_ms);
  /// The telemetry's time has moved on to ts_ms although no record says so: no acme.util record
  /// before ts_ms is still to come (a writer's heartbeat or progress marker, the end of its stream).
  /// Each cluster's expiry clock moves there (never past the telemetry bound), so the series of a
  /// cluster whose telemetry ended leave one export.series_ttl_s after their last sample, as a real
  /// exporter's series go stale when its GPUs stop reporting. Only rises.
  void NoteTelemetryReached(int64_t ts_ms);

  /// Moves the closed anomaly flags on by the wall clock: a flag shown at 1 for two scrape
  /// intervals turns 0, one closed two scrape intervals ago goes. Scrapes call it; so does Apply.
  void Tick();

  /// Adds n to acmetrace_records_total{stage,topic} (the other stages of an in-process run).
  void CountRecords(std::string_view stage, std::string_view topic, int64_t n);
  /// Raises acmetrace_replay_trace_time_seconds{cluster} to ts_ms (never lowers it).
  void NoteTraceTime(std::string_view cluster, int64_t ts_ms);
  /// The newest trace time of any cluster (acmetrace_replay_trace_time_seconds' largest); none
  /// before the first record. Thread-safe.
  std::optional<int64_t> NewestTraceTimeMs();
  /// acmetrace_replay_speed (0 = max) and acmetrace_replay_lag_seconds, known in `run` only.
  void SetReplayStatus(double speed, double lag_s);

  /// Everything (target empty) or one node's persona series (target "NODE" or "CLUSTER/NODE").
  std::vector<prometheus::MetricFamily> Collect(std::string_view target = {});
  /// The state as text exposition format (0.0.4): what the records made, the same for the same
  /// records (--metrics-out); closed anomaly flags kept for scrapers are not in it. Rendered from
  /// pre-rendered labels (the same text prometheus-cpp's TextSerializer writes for Collect, 20x
  /// faster); no timestamps.
  std::string Exposition(std::string_view target = {});
  /// What a scrape of /metrics serves: Tick, then the state with the closed flags still shown, and
  /// (target empty) acmetrace_build_info and the process_* series read from /proc now.
  std::string ScrapeExposition(std::string_view target = {});
  /// What one scrape of every target serves, in one pass (history: `acmetrace backfill`): Tick,
  /// then into cluster_view the target-less scrape view without the per-target families (what the
  /// shipped Prometheus config keeps from the exporter's own target) and acmetrace_build_info, but
  /// no process_* series (the backfilling process is not the one that served the data); every
  /// per-target (persona) series to on_target_sample.
  void ScrapeEveryTarget(std::string& cluster_view,
                         const std::function<void(const SeriesStore::TargetSample&)>& on_target_sample);
  /// More self metrics, appended (text format) to every scrape of everything: ScrapeExposition
  /// without a target and ScrapeEveryTarget's cluster view (another stage's own, e.g. the remote
  /// write queue's). fn is called from scraping threads; an empty fn removes it.
  void SetExtraSelfMetrics(std::function<void(std::string&)> fn);
  /// Prometheus HTTP service discovery: one target group per cluster, the nodes as targets.
  std::string TargetsJson() const;
  /// True once a record has been applied (the server's /-/ready).
  bool ready() const { return applied_.load(std::memory_order_relaxed); }

  SeriesStore& store() { return store_; }
  const WindowMapping& mapping() const { return mapping_; }
  const DcgmPersona& persona() const { return persona_; }
  FamilyId anomaly_active_family() const { return anomaly_active_; }
  FamilyId anomalies_total_family() const { return anomalies_total_; }

 private:
  // What a flag shows a scraper: open, or closed and kept (1 until shown for two scrape
  // intervals, then 0 until two intervals after its close).
  struct FlagView {
    bool open = false;
    bool zero = false;           // closed and already turned 0
    int64_t shown_since_ms = 0;  // wall time it was last set to 1
    int64_t closed_at_ms = 0;    // wall time of its close (when not open)
  };
  void ApplyAnomaly(const core::AnomalyEvent& a);
  void TickLocked(int64_t now_ms);
  void NoteCluster(std::string_view cluster);
  void RefreshSelfMetrics();
  std::string Render(std::string_view target, bool scrape_view,
                     SeriesStore::Families families = SeriesStore::Families::kAll);

  ExportOptions options_;
  const core::InputErrors* errors_;
  std::unique_ptr<core::Clock> own_clock_;
  core::Clock* wall_clock_;
  SeriesStore store_;
  WindowMapping mapping_;
  DcgmPersona persona_;
  FamilyId anomaly_active_;
  FamilyId anomalies_total_;
  FamilyId records_total_;
  FamilyId input_errors_total_;
  FamilyId trace_time_;
  FamilyId replay_speed_;
  FamilyId replay_lag_;
  std::atomic<size_t> last_size_{1 << 16};
  std::atomic<bool> applied_{false};
  std::mutex apply_mutex_;  // one Apply at a time (the mapping and persona keep scratch state); guards flags_, clusters_
  std::unordered_map<std::string, FlagView> flags_;  // anomaly_active key -> what it shows
  size_t closed_flags_ = 0;                          // of flags_, closed and still shown
  std::set<std::string, std::less<>> clusters_;      // clusters whose counters were created at 0
  std::mutex extra_mutex_;  // guards extra_self_metrics_ (held while it appends)
  std::function<void(std::string&)> extra_self_metrics_;
  void AppendExtraSelfMetrics(std::string& out);
  std::mutex self_mutex_;   // guards the two maps below
  std::map<std::string, int64_t, std::less<>> records_;       // "stage\x1ftopic" -> count
  std::map<std::string, int64_t, std::less<>> trace_time_ms_; // cluster -> newest event time
  // Guarded by apply_mutex_: each cluster's newest util record, and the bound its clock stays under.
  std::map<std::string, int64_t, std::less<>> newest_util_ms_;
  int64_t telemetry_bound_ms_ = INT64_MAX;
  int64_t telemetry_reached_ms_ = INT64_MIN;  // NoteTelemetryReached
  // A cluster's expiry clock: its newest util record or where the telemetry is known to have
  // reached, whichever is later, never past the bound.
  void AdvanceTelemetryClocks();
};

}  // namespace acmetrace::exporters

// One cluster's metrics: mergeable per-window aggregates, the in-flight job table behind the gauges,
// cumulative totals, and the acme.metrics records of each closed window (docs/processors.md).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/quantile_sketch.h"

namespace acmetrace::processors {

class StateWriter;
class StateReader;

/// The telemetry quantities summarised as distributions (mean, p50, p95).
enum class Quantity : int {
  kGpuUtil,       // GPU_UTIL, percent
  kSmActive,      // SM_ACTIVE, percent (fraction in raw files)
  kSmOccupancy,   // SM_OCCUPANCY, percent (fraction in raw files)
  kTensorActive,  // PIPE_TENSOR_ACTIVE, percent (fraction in raw files)
  kDramActive,    // DRAM_ACTIVE, percent (fraction in raw files)
  kFbUsed,        // FB_USED, MiB
  kNodeCpu,       // NODE_CPU_UTILIZATION, percent (fraction in raw files)
  kNodeMemory,    // NODE_MEMORY_UTILIZATION, percent (fraction in raw files)
};
inline constexpr int kQuantityCount = 8;
/// The acme.metrics name of a quantity, e.g. "gpu_util_percent".
std::string_view QuantityMetricName(Quantity q);

/// Sum, count, max and quantile sketch of one quantity. Mergeable. Value type.
struct Distribution {
  explicit Distribution(double accuracy = 0.01) : sketch(accuracy) {}
  void Add(double value);
  void Merge(const Distribution& other);
  uint64_t count = 0;
  double sum = 0;
  QuantileSketch sketch;
  template <class Io, class Self>
  static void Fields(Io& io, Self& d) {
    io(d.count, d.sum, d.sketch);
  }
};

/// Cluster totals at one sample time (summed over nodes), so a window reports their mean over its
/// sample times. Mergeable by adding per time.
struct TimeTotals {
  double gpus_idle = 0;  // GPUs with GPU_UTIL == 0
  double gpus_reporting = 0;
  double gpu_power_w = 0;
  double power_samples = 0;
  double ib_send = 0;
  double ib_send_samples = 0;
  double ib_receive = 0;
  double ib_receive_samples = 0;
  void Merge(const TimeTotals& o);
  template <class Io, class Self>
  static void Fields(Io& io, Self& t) {
    io(t.gpus_idle, t.gpus_reporting, t.gpu_power_w, t.power_samples, t.ib_send, t.ib_send_samples, t.ib_receive,
       t.ib_receive_samples);
  }
};

/// Everything one cluster's records contributed to one base window. Every field is a count, a sum,
/// a max or a sketch, so Merge of the windows of a rolling view is exact. Value type.
struct WindowAggregate {
  explicit WindowAggregate(double accuracy = 0.01);
  /// Adds other's counts, sums, maxima and (with_sketches) sketches.
  void Merge(const WindowAggregate& other, bool with_sketches = true);
  void Save(StateWriter& out) const;
  bool Load(StateReader& in, double accuracy);

  int64_t records = 0;
  int64_t late_records = 0;
  // Job events, labels as acme.metrics writes them ("type=Eval", "kind=gpu,type=Eval,state=FAILED").
  std::map<std::string, int64_t> submitted;
  std::map<std::string, int64_t> started;
  std::map<std::string, int64_t> finished;
  std::map<std::string, double> gpu_seconds;
  int64_t gpu_jobs_finished = 0;
  int64_t gpu_jobs_failed = 0;
  QuantileSketch queue_s;     // GPU jobs starting: published queue_s
  QuantileSketch duration_s;  // GPU jobs ending: published duration_s
  // Telemetry.
  std::array<Distribution, kQuantityCount> quantities;
  std::map<int64_t, TimeTotals> per_time;
  double gpu_temp_max = core::kNoSample;
  std::map<std::string, std::pair<double, int64_t>> ipmi_power;  // model -> (sum of Sys_Total_Power, samples)

  /// The fields, for the snapshot codec (state_codec.h), in the order they are stored.
  template <class Io, class Self>
  static void Fields(Io& io, Self& w) {
    io(w.records, w.late_records, w.submitted, w.started, w.finished, w.gpu_seconds, w.gpu_jobs_finished,
       w.gpu_jobs_failed, w.queue_s, w.duration_s, w.quantities, w.per_time, w.gpu_temp_max, w.ipmi_power);
  }
};

/// True for final job states that count as failed: FAILED, TIMEOUT, NODE_FAIL.
bool IsFailedState(std::string_view state);

/// One cluster's metrics state. Records are applied in event-time order (the stream processor's
/// job), each to the open base window; CloseWindow emits that window and its rolling views.
/// Memory: the in-flight job table plus one aggregate per base window of the longest view.
/// Not thread-safe.
class ClusterMetrics {
 public:
  ClusterMetrics(std::string cluster, const ProcessOptions& options);

  /// Applies a record of this cluster to the base window starting at window_start_ms. late marks
  /// a record whose event time was clamped to the watermark.
  void Apply(const core::Record& record, int64_t window_start_ms, bool late);
  /// Closes the base window starting at start_ms (the one records were applied to) and appends one
  /// MetricsWindow per configured window length (base first), each ending at start_ms + base.
  void CloseWindow(int64_t start_ms, std::vector<core::MetricsWindow>& out);

  void Save(StateWriter& out) const;
  bool Load(StateReader& in);
  /// The capacity seen in telemetry, for the processor's snapshot (version 3 on).
  template <class Io, class Self>
  static void CapacityFields(Io& io, Self& m) {
    io(m.gpus_seen_per_node_, m.gpus_seen_);
  }

  const std::string& cluster() const { return cluster_; }
  int64_t jobs_in_flight() const { return static_cast<int64_t>(jobs_.size()); }

 private:
  struct JobInFlight {
    std::string type;
    int64_t gpu_num = 0;
    bool running = false;
    template <class Io, class Self>
    static void Fields(Io& io, Self& j) {
      io(j.type, j.gpu_num, j.running);
    }
  };
  // The saved state, described once for Save and Load (cluster_metrics.cc).
  template <class Io, class Self>
  static void Fields(Io& io, Self& m);

  WindowAggregate& Open(int64_t start_ms);
  void ApplyJob(const core::JobEvent& e, WindowAggregate& w);
  void ApplyUtil(const core::UtilSample& s, WindowAggregate& w);
  void ApplyPower(const core::PowerSample& p, WindowAggregate& w);
  void AddJobToGauges(const JobInFlight& job, int sign);
  void AppendView(const WindowAggregate& view, std::map<std::string, double>& m) const;
  void AppendGaugesAndTotals(std::map<std::string, double>& m) const;

  std::string cluster_;
  ProcessOptions options_;
  double percent_scale_;  // 100 for raw fractions, 1 for percent input
  int64_t open_start_ms_ = 0;
  bool has_open_ = false;
  WindowAggregate open_;
  std::map<int64_t, WindowAggregate> closed_;  // base windows within the longest view, by start
  // The sketches of each rolling view (windows_s[1..]), kept by adding the newest base window and
  // subtracting the ones that leave: merging 60 windows' sketches every minute costs more than the
  // records. Not saved: rebuilt from closed_ on Load (integer counts, so exactly the same).
  struct RollingSketches {
    explicit RollingSketches(double accuracy);
    std::array<QuantileSketch, kQuantityCount> quantities;
    QuantileSketch queue_s;
    QuantileSketch duration_s;
    std::vector<int64_t> starts;  // base windows included, oldest first
    void Add(const WindowAggregate& w);
    void Subtract(const WindowAggregate& w);
  };
  std::vector<RollingSketches> rolling_;
  void AdvanceRolling(int64_t end_ms);

  std::unordered_map<std::string, JobInFlight> jobs_;
  std::map<std::string, int64_t> running_, pending_;  // by type label ("type=Eval")
  int64_t gpus_allocated_ = 0;
  int64_t gpus_pending_ = 0;
  std::map<std::string, int64_t> submitted_total_, started_total_, finished_total_;
  std::map<std::string, double> gpu_seconds_total_;
  int64_t records_total_ = 0;
  int64_t late_total_ = 0;
  // Capacity as the data shows it: per node, the GPUs that ever had a sample (highest index + 1), and
  // their sum. gpus_total is this sum once telemetry was seen, else process.capacity_gpus (the
  // published size: job-only replays). Saved apart from Save/Load (CapacityFields: snapshots from
  // version 3), so a restored processor keeps it for windows without telemetry.
  std::unordered_map<std::string, int64_t> gpus_seen_per_node_;
  int64_t gpus_seen_ = 0;
};

}  // namespace acmetrace::processors

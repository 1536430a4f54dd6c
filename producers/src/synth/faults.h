// Fault injection for the generator (--inject-faults): incidents of the kinds the anomaly detectors flag,
// placed deterministically from the seed, applied to the schedule (job faults) and to the telemetry as it
// is written, and listed in DIR/faults.csv together with the incidents the generator makes on its own
// (XIDs left by jobs that died of a GPU fault, NODE_FAIL jobs). See docs/anomalies.md, "Fault injection".
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "synth/layout.h"
#include "synth/model.h"
#include "synth/schedule.h"

namespace acmetrace::producers::synth {

enum class FaultKind : uint8_t {
  kGpuOverheat,
  kXidError,
  kTelemetryGap,
  kGpuStraggler,
  kUtilDrop,
  kFailureBurst,
  kNodeFailure,
  kQueueBacklog,
  kLargeJobFailure,
};
inline constexpr int kFaultKindCount = 9;
/// A job of this many GPUs or more is large (the paper's large pretraining jobs): when it ends failed
/// (FAILED, NODE_FAIL, TIMEOUT) it is a large_job_failure incident.
inline constexpr int kLargeJobGpus = 256;
/// The GPUs from which a job of a cluster of `gpus` GPUs is large: kLargeJobGpus, or a third of a
/// cluster too small to hold such jobs as the release's do (at small scales synth narrows the largest
/// jobs to at most half the cluster: a 0.2 Seren runs them on 224 of its 456 GPUs, a 0.2 Kalos on
/// 176-240 of 480), as the large_job_failure detector's default cluster_share.
inline int LargeJobGpus(int gpus) { return std::min(kLargeJobGpus, (gpus + 2) / 3); }
/// The detector kind id: "gpu_overheat", "xid_error", ...
std::string_view FaultKindName(FaultKind kind);

/// An overheat is critical from this GPU_TEMP (C) on: the shipped DcgmGpuTemperatureCritical's threshold,
/// where an A100 throttles hard.
inline constexpr double kCriticalOverheatC = 90;
/// True for the XIDs of hardware or driver faults a GPU does not recover from without a reset or repair
/// (48, 63, 64, 74, 79, 92, 94, 95: the shipped DcgmGpuXidHardwareError's list): a critical xid_error.
bool IsHardwareXid(uint16_t code);

/// One incident of a cluster. Times are unix seconds, [start_s, end_s) (start_s == end_s for a job that
/// ended NODE_FAIL). Value type.
struct Fault {
  FaultKind kind = FaultKind::kGpuOverheat;
  int64_t start_s = 0;
  int64_t end_s = 0;
  int32_t node = -1;  // telemetry faults: the node (index into the layout)
  int32_t gpu = -1;   // GPU faults: the GPU index on the node
  int32_t job = -1;   // node and large job failures: index into Schedule::jobs
  // Magnitude: degrees C (overheat), XID code (xid_error), SM fraction of the peers (straggler), points
  // of cluster GPU_UTIL (util drop), multiple of the baseline failure rate (burst), GPUs waiting
  // (backlog), the job's GPUs (large job failure).
  double level = 0;
  bool injected = true;  // false: the generator's own incident, listed as ground truth
};

/// faults.csv's severity of a fault: "critical" for an overheat reaching kCriticalOverheatC and a hardware
/// XID, "warning" for a cooler overheat and another XID, "" (no tier) for the other kinds.
std::string_view FaultSeverity(const Fault& fault);

/// What the faults do to one GPU sample; the telemetry writer applies it. Value type.
struct GpuFaultEffect {
  float activity_scale = 1;  // cluster-wide stall: GPU_UTIL, SM, tensor, occupancy, DRAM, copy
  float sm_scale = 1;        // straggler: SM, tensor, occupancy, DRAM
  float power_scale = 1;
  float temp_floor = 0;      // overheat: GPU_TEMP reads at least this (0: no effect)
};

/// An XID code held in a GPU's register over [start_s, end_s). gpu_index = node * 8 + GPU. Value type.
struct XidWindow {
  int32_t gpu_index = 0;
  int64_t start_s = 0;
  int64_t end_s = 0;
  uint16_t code = 0;
};

/// The faults of one cluster and their effect on its telemetry. A default-constructed plan has none.
/// Not thread-safe; the telemetry hooks must be called in rising time order, as the writer does.
class FaultPlan {
 public:
  FaultPlan() = default;

  /// Plans the faults of one cluster. Job faults change schedule at once, within its capacity: large
  /// job failures end running large jobs FAILED (their campaign restarts them on the same GPUs) unless
  /// PlanLargeJobs's jobs are in it, failure bursts add FAILED jobs on free GPUs, queue backlogs jobs
  /// that wait, then start as GPUs free up (all re-sorted by submit time), node failures end running
  /// jobs NODE_FAIL early. Failed jobs of at least LargeJobGpus are listed as large job failures.
  static FaultPlan Inject(const ClusterModel& model, Schedule& schedule, uint64_t seed);
  /// The failing large jobs to add to the cluster's workload (SimulationParams::extra_jobs) before the
  /// schedule given to Inject is simulated: none when `schedule`, simulated without them, runs large
  /// jobs enough for the window's large job failures; else all of them, each waiting for room in the
  /// scheduler's queue like any other job. Inject then lists them.
  static std::vector<Job> PlanLargeJobs(const ClusterModel& model, const Schedule& schedule, uint64_t seed);

  // ---- Telemetry hooks --------------------------------------------------------------------------
  /// Called once with the XIDs the generator puts on GPUs by itself: notes them as ground truth and
  /// returns the injected XIDs to add (dropping any that would overlap a natural one on the same GPU).
  std::vector<XidWindow> ResolveXids(const std::vector<XidWindow>& natural);
  /// Starts the row of time t (sizes a util drop starting now from the rows before).
  void BeginRow(int64_t t);
  /// True if node's cells are empty at the current row (telemetry gap).
  bool NodeSilent(int node) const { return !silent_.empty() && silent_[node]; }
  /// The effect on GPU gpu_index (node * 8 + GPU) at the current row.
  GpuFaultEffect GpuEffect(int gpu_index, bool running) const;
  /// Ends the current row: the mean GPU_UTIL of its GPUs before faults (negative: not computed).
  void EndRow(double mean_util);

  /// DIR/faults.csv rows ("cluster,kind,subject,start,end,severity") of this cluster, by start time. Kinds whose
  /// evidence is not among the written metrics are left out (an overheat nobody can see).
  void AppendRows(const ClusterModel& model, const ClusterLayout& layout, const std::vector<std::string>& job_ids,
                  const std::vector<std::string>& metrics, std::string& out) const;

  const std::vector<Fault>& faults() const { return faults_; }

 private:
  void Index();  // rebuilds the per-GPU, per-node and cluster lists below from faults_

  std::vector<Fault> faults_;
  std::vector<std::vector<int32_t>> gpu_faults_;  // per GPU index: indices into faults_ (overheat, straggler)
  std::vector<int32_t> cluster_faults_;           // util drops
  std::vector<int32_t> node_gaps_;                // telemetry gaps
  std::vector<double> drop_scale_;                // per fault: activity factor of a util drop once sized
  std::vector<char> silent_;                      // per node, current row
  int nodes_ = 0;
  int64_t window_start_s_ = 0;
  int64_t row_t_ = 0;
  float row_activity_scale_ = 1;
  double util_ewma_ = -1;  // cluster mean GPU_UTIL, smoothed over the rows before
  uint64_t noise_key_ = 0;
};

}  // namespace acmetrace::producers::synth

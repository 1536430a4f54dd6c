// The statistical model of one cluster: job mix, sizes, durations, states, queueing, arrivals and
// hardware, with the calibration constants that make it match the published statistics.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "synth/published_stats.h"

namespace acmetrace::producers::synth {

enum class JobType : uint8_t { kPretrain, kEval, kSft, kMllm, kDebug, kOther };
inline constexpr int kJobTypeCount = 6;
std::string_view JobTypeName(JobType type);

enum class JobState : uint8_t { kCompleted, kCancelled, kFailed, kTimeout, kNodeFail };
std::string_view JobStateName(JobState state);

/// Coarse outcome used by the model (TIMEOUT and NODE_FAIL are drawn inside "failed", as the release's
/// analysis counts them).
enum Outcome : int { kOutcomeCompleted = 0, kOutcomeCancelled = 1, kOutcomeFailed = 2 };

struct SizeWeight {
  int gpus;
  double weight;
};

/// Queueing delay before the scheduler sees a job (submission overheads, quotas, user holds): with
/// probability p_short a few seconds (geometric with mean short_mean_s), else log-normal.
struct QueueModel {
  double p_short;
  double short_mean_s;
  double median_s;
  double sigma;
};

/// One GPU job type. Durations are log-normal per outcome, scaled so the type's mean GPU time per job
/// and its split across outcomes match the published shares (see CalibrateScales).
struct GpuTypeModel {
  JobType type;
  double count_share;                 // of GPU jobs (release treemap)
  double gpu_time_share;              // of GPU time (release treemap)
  std::vector<SizeWeight> sizes;      // GPUs per job
  double size_exponent;               // duration grows like gpus^size_exponent
  std::array<double, 3> outcome_share;     // by count: completed, cancelled, failed
  std::array<double, 3> outcome_gpu_time;  // share of this type's GPU time per outcome
  std::array<double, 3> sigma;             // log-normal spread of duration per outcome
  QueueModel queue;
  int campaign_min_gpus = 0;  // jobs this large run as campaigns of resubmitted jobs (0: never)
  double max_run_s = 0;       // longest run of this type (0: the cluster's published maximum)
  // Derived by CalibrateScales: median duration of a 1-GPU job per outcome.
  std::array<double, 3> scale_s{};
  double activity_mean = 0;  // job-level GPU activity offset (normal units): pretraining runs hot
};

struct CpuJobModel {
  double median_s;
  double sigma;
  std::array<double, 3> outcome_share;
  std::array<double, 3> outcome_duration_factor;  // relative median per outcome
  QueueModel queue;
  std::array<double, kJobTypeCount> type_weight;  // the release does not say; see docs/synth.md
};

/// Everything the generator knows about one cluster, after calibration. Value type.
struct ClusterModel {
  std::string name;           // "seren", "kalos"
  int offset_minutes;         // timezone of the trace's timestamps
  int full_nodes;             // 8-GPU servers at scale 1
  double trace_days;          // span of the release's job trace
  bool kalos_format;          // Kalos columns and duration = end - submit
  bool has_ib;                // NODE_IB_* published (Seren only)
  bool has_ipmi;              // IPMI files published (Seren only)
  double pod_named_share;     // share of nodes named by pod (Kalos)
  PublishedSummary summary;

  std::vector<GpuTypeModel> gpu_types;
  CpuJobModel cpu;
  double max_run_s;             // published max_run_time_gpu
  double never_start_share;     // of cancelled jobs, cancelled while pending
  double timeout_share;         // of failed GPU jobs
  double node_fail_share;       // of failed GPU jobs
  double hardware_xid_share;    // of failed GPU jobs, ended by a GPU fault that leaves an XID
  double eval_burst_mean;       // mean jobs per evaluation submission burst
  int users;                    // size of the user population
  double campaign_days;         // mean length of a pretraining campaign

  // Arrival rates at scale 1 (jobs per day), set by the calibration from the published numbers.
  double gpu_jobs_per_day = 0;
  double cpu_jobs_per_day = 0;
  double gpu_time_per_job = 0;  // model mean GPU seconds per GPU job
  double target_allocation = 0; // share of GPUs allocated the arrival rate aims for
};

/// The calibrated model of "seren" or "kalos"; name must be one of those. load_from_util selects the
/// GPU-job arrival rate (see SynthLoad).
ClusterModel MakeClusterModel(std::string_view name, bool load_from_util);

/// Median duration scales per (type, outcome) so each type's mean GPU time per job matches the
/// published share (exposed for the calibration tests).
void CalibrateScales(ClusterModel& model);

/// Relative submission rate at a local hour of day and day of week (mean 1 over a week).
double ArrivalRhythm(double local_hour, int local_weekday);
/// The largest ArrivalRhythm value (for thinning).
double MaxArrivalRhythm();

/// The longest run a job of this type may have in this cluster.
inline double MaxRun(const ClusterModel& model, const GpuTypeModel& type) {
  return type.max_run_s > 0 ? std::min(type.max_run_s, model.max_run_s) : model.max_run_s;
}

/// Duration of a job, before clamping, from a standard-normal draw z.
double DurationFor(const GpuTypeModel& type, int outcome, int gpus, double z);

/// Mean duration the sampler produces for (type, outcome, gpus), clamped to [1, max_run_s].
double ExpectedDuration(const GpuTypeModel& type, int outcome, int gpus, double max_run_s);

/// Mean of a queueing delay drawn from q.
double ExpectedQueue(const QueueModel& q);

}  // namespace acmetrace::producers::synth

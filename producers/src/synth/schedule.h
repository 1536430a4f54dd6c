// Jobs of one cluster and their placement on GPUs: arrivals drawn from the model, then an event-driven
// scheduler (FIFO with EASY backfilling) that puts each GPU job on concrete nodes and GPUs.
#pragma once

#include <cstdint>
#include <vector>

#include "synth/model.h"

namespace acmetrace::producers::synth {

/// GPUs of one node held by a job (bit g = GPU index g).
struct NodeAlloc {
  int32_t node;
  uint8_t gpu_mask;
};

/// One job, as simulated. Times are unix seconds.
struct Job {
  int64_t submit_s = 0;
  int64_t eligible_s = 0;  // submit + queueing the scheduler does not model (holds, quotas, overheads)
  int64_t start_s = -1;    // -1: cancelled while pending, never started
  int64_t end_s = 0;
  int64_t run_s = 0;       // end - start once started
  int32_t gpus = 0;        // 0: CPU job
  int32_t nodes = 1;
  int32_t cpus = 1;
  int32_t user = 0;        // index into the cluster's user names
  int32_t mem_gb = 0;      // Kalos pod memory
  float shared_mem_gb = 0;
  JobType type = JobType::kOther;
  JobState state = JobState::kCompleted;
  bool in_trace = false;   // written to the job trace (IsInTrace)
  uint16_t xid = 0;        // XID left on one of its GPUs when it ends (0: none)
  float activity = 0;      // job-level GPU activity in normal units (telemetry)
  uint64_t key = 0;        // seeds this job's telemetry noise
  int32_t campaign = -1;   // pretraining campaign it belongs to (-1: none)
  bool ahead = false;      // queued ahead of the jobs without (a pretraining team's priority)...
  bool dropped = false;    // ...and not submitted, as it could not start soon enough
  std::vector<NodeAlloc> alloc;
};

/// What SimulateCluster produces. Value type.
struct Schedule {
  std::vector<Job> jobs;  // sorted by submit time (ties in generation order)
  int nodes = 0;
  int64_t window_start_s = 0;
  int64_t window_end_s = 0;
};

struct SimulationParams {
  uint64_t seed = 1;
  double scale = 1.0;
  int64_t window_start_s = 0;
  int days = 1;
  int warmup_days = 5;  // jobs submitted before the window still hold GPUs when it opens
  // Jobs added to the generated ones, scheduled like them (they wait for room in the queue): the
  // injected incidents' jobs that need GPUs the cluster would not otherwise free (FaultPlan).
  std::vector<Job> extra_jobs;
};

/// Whether a job belongs in the trace of [window_start_s, window_end_s): submitted in the window, or
/// before it and still pending or running when it opens (as a slice of the release shows the jobs
/// alive in it), so the jobs of the trace hold every GPU the telemetry shows in use.
bool IsInTrace(const Job& job, int64_t window_start_s, int64_t window_end_s);

/// Number of 8-GPU nodes of the cluster at this scale (at least 1).
int NodeCount(const ClusterModel& model, double scale);

/// Generates the jobs of [window - warmup, window end + tail) and places the GPU jobs.
Schedule SimulateCluster(const ClusterModel& model, const SimulationParams& params);

}  // namespace acmetrace::producers::synth

// The generator's file writers: job traces, utilization (DCGM and node metrics) and IPMI power, each in
// the release's exact format.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"
#include "synth/layout.h"
#include "synth/model.h"
#include "synth/schedule.h"

namespace acmetrace::producers::synth {

class FaultPlan;

/// What a writer produced. Value type.
struct WrittenFile {
  std::string path;
  int64_t bytes = 0;
  int64_t rows = 0;  // data rows (header excluded)
};

/// DIR/data/job_trace/trace_{cluster}.csv: the jobs submitted in the window, in submit order.
core::Status WriteJobTrace(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                           const std::vector<std::string>& job_ids, const std::string& path, WrittenFile& written);

/// Which telemetry to write for one cluster.
struct TelemetryRequest {
  std::string utilization_dir;          // DIR/data/utilization/{cluster}
  std::string ipmi_dir;                 // DIR/data/utilization/ipmi (Seren)
  std::vector<std::string> metrics;     // DCGM and node metric names to write
  bool ipmi = false;
  uint64_t seed = 1;
  FaultPlan* faults = nullptr;          // injected incidents to apply (--inject-faults), or none
};

/// The utilization files (one pass over time, one buffer per file) and, if asked, the IPMI files.
core::Status WriteTelemetry(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                            const TelemetryRequest& request, std::vector<WrittenFile>& written);

/// What the jobs' GPUs compute in the telemetry WriteTelemetry writes for a schedule (its seed), read
/// before writing it, so that faults are placed where they can be seen. Not thread-safe.
class JobActivityProbe {
 public:
  virtual ~JobActivityProbe() = default;
  /// The longest stretch (s) of [from_s, to_s) in which the SM_ACTIVE (0..1) of job's GPUs before faults
  /// (their shared part: the median of the job's GPUs up to each GPU's own noise), smoothed as an EWMA
  /// with time constant smooth_s from the job's start, stays at or above min_sm. job indexes
  /// Schedule::jobs.
  virtual int64_t LongestBusyS(int32_t job, int64_t from_s, int64_t to_s, double min_sm, double smooth_s) const = 0;
};

/// The probe of the telemetry of schedule as WriteTelemetry(model, schedule, layout, {seed}) writes it;
/// schedule must outlive it and not change.
std::unique_ptr<JobActivityProbe> MakeJobActivityProbe(const ClusterModel& model, const Schedule& schedule,
                                                       const ClusterLayout& layout, uint64_t seed);

/// DIR/schedule.csv rows for one cluster: which GPUs ran which job when (ground truth, not a release
/// file). The header is written by the caller once.
void AppendScheduleRows(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                        const std::vector<std::string>& job_ids, std::string& out);

/// Job ids for every job of the schedule, by index: numeric and rising in submit order on Seren (as
/// Slurm's), "dlc" and 13 base-36 characters on Kalos.
std::vector<std::string> MakeJobIds(const ClusterModel& model, const Schedule& schedule, uint64_t seed);

inline constexpr const char* kDcgmMetrics[] = {
    "XID_ERRORS",  "GPU_TEMP",     "MEMORY_TEMP", "MEM_CLOCK",          "MEM_COPY_UTIL", "FB_FREE",     "FB_USED",
    "DRAM_ACTIVE", "POWER_USAGE", "GPU_UTIL",    "PIPE_TENSOR_ACTIVE", "SM_ACTIVE",     "SM_OCCUPANCY"};
inline constexpr const char* kNodeMetrics[] = {"NODE_CPU_UTILIZATION", "NODE_MEMORY_UTILIZATION", "NODE_IB_SEND",
                                               "NODE_IB_RECEIVE"};

}  // namespace acmetrace::producers::synth

// Synthetic AcmeTrace data: job traces and telemetry in the release's exact file formats, calibrated on
// the published statistics, for tests, demos and benchmarks without the 80 GB download. See docs/synth.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::producers {

/// Which published figure sets the GPU-job arrival rate. The release's job trace (averaged over its whole
/// span) and its utilization logs (a few busy weeks) disagree on how busy the clusters were; see
/// docs/synth.md, "Load".
enum class SynthLoad {
  /// GPU jobs arrive fast enough for the GPUs to be as busy as in the utilization logs (the default:
  /// telemetry and job trace then agree with each other and with the published utilization CDFs).
  kUtilizationLogs,
  /// GPU jobs arrive at the trace's average rate (published job count over the trace's span); Kalos
  /// telemetry is then far idler than its published CDFs.
  kTraceAverage,
};

/// What to generate. Value type.
struct SynthOptions {
  /// Writes out_dir/data/job_trace/..., out_dir/data/utilization/... (created if missing).
  std::string out_dir;
  std::vector<std::string> clusters{"seren", "kalos"};
  /// First instant of the window, unix ms; default 2023-07-01 00:00:00+08:00.
  int64_t start_ms = 1688140800000;
  int days = 1;
  uint64_t seed = 1;
  /// Scales node count and job arrivals (at least 1 node per cluster).
  double scale = 1.0;
  /// Empty = every telemetry file; else names from SynthMetricNames() (GPU_UTIL, NODE_CPU_UTILIZATION,
  /// IPMI, ...), or just "none" for no telemetry. The job traces are always written.
  std::vector<std::string> metrics;
  /// Also injects incidents for the anomaly detectors and writes their ground truth to DIR/faults.csv
  /// (the fault-injection issue; until it lands, WriteSynthetic may refuse this).
  bool inject_faults = false;
  SynthLoad load = SynthLoad::kUtilizationLogs;
  /// Also writes out_dir/schedule.csv: which GPUs ran which job when (ground truth for tests and
  /// detectors; not part of the release format).
  bool write_schedule = false;
};

/// What was written (for the CLI to print and tests to check). Value type.
struct SynthReport {
  int64_t jobs = 0;       // job-trace rows, all clusters
  int64_t nodes = 0;      // GPU servers simulated, all clusters
  int64_t util_rows = 0;  // data rows written to utilization files (each file counted)
  int64_t bytes = 0;      // bytes written, all files
  std::vector<std::string> files;  // paths written, in the order they were completed
};

/// Which generator wrote a data set: raised whenever the same options give other bytes than before, so
/// a data set synthesized once and kept (`acmetrace run`'s default) is made again by a newer build.
/// 2: issue #14's session 8 (bursts sized by the hours before them, injected large-job failures).
/// 3: issue #14, stragglers placed only where their job's GPUs compute (--inject-faults data only).
/// 4: issue #14, failure bursts sized in time order against the earlier bursts too, and against a
/// negative binomial chance (--inject-faults data only).
/// 5: issue #14, a computing GPU's GPU_UTIL within a few points of its job's (every data set).
/// 6: issue #22, one cluster behind trace and telemetry: jobs alive when the window opens are in the
/// trace, the incidents' jobs take free GPUs, Seren's load set by its GPU_UTIL zero share (every data set).
/// 7: issue #24, overheats at 86-88 or 91 C and faults.csv's severity column (--inject-faults data only).
inline constexpr int kSynthGeneration = 7;

/// Generates the data set described by options. Deterministic: the same options give the same bytes.
/// Not thread-safe with respect to its output directory; otherwise reentrant.
core::Result<SynthReport> WriteSynthetic(const SynthOptions& options);

/// Names accepted in SynthOptions::metrics: the 13 DCGM metrics, the 4 node metrics, IPMI (the three
/// Seren power files), and "none" (job traces only).
std::vector<std::string> SynthMetricNames();

}  // namespace acmetrace::producers

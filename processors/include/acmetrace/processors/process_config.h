// The process.* configuration keys (declared here, beside the code that reads them) and the
// options they make.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "acmetrace/core/config.h"

namespace acmetrace::processors {

/// How telemetry values are read (docs/processors.md "Units").
enum class TelemetryUnits {
  kRaw,      // the release's raw files: *_ACTIVE, SM_OCCUPANCY, NODE_CPU/MEMORY_UTILIZATION are fractions
  kPercent,  // processed copies that already hold those as percent
};

/// Everything the stream processor reads from process.*. Value type.
struct ProcessOptions {
  int64_t allowed_lateness_ms = 60'000;
  /// An open telemetry flag whose evidence has been silent this long closes (EvidenceGate).
  int64_t evidence_timeout_ms = 300'000;
  /// With several input partitions (Kafka): how far one record or progress marker may move its
  /// partition's event time on (past the
  /// partition's last trusted time, or the other partitions' if it has none) and be trusted at once.
  /// Beyond it the time counts for nothing until the partition's next item confirms it (at or after
  /// it, less the allowed lateness); an earlier next item shows it false: an input error, the record
  /// dropped. 0 = every time trusted at once.
  int64_t max_partition_lead_ms = 300'000;
  /// Window lengths in seconds: the smallest is the tumbling base window; the others are rolling
  /// views over the last N base windows, emitted when each base window closes. Multiples of the base.
  std::vector<int64_t> windows_s = {60, 300, 3600};
  std::map<std::string, int64_t> capacity_gpus = {{"kalos", 2416}, {"seren", 2288}};
  double quantile_accuracy = 0.01;
  TelemetryUnits units = TelemetryUnits::kRaw;
  /// Clusters in ownership order: with N instances in a group, cluster i is owned by whoever holds
  /// partition i of the ownership topic.
  std::vector<std::string> clusters = {"seren", "kalos"};
  bool detectors = true;
  std::string state_dir;
  int64_t snapshot_interval_ms = 5'000;
  std::string ownership_topic = "acme.process.owners";
  /// Apply closed windows (metrics, detectors, writing) on a second thread while records are read
  /// and parsed on the caller's. Off here (tests drive the processor step by step); the config's
  /// process.worker_thread defaults to on.
  bool worker_thread = false;

  int64_t base_window_ms() const { return windows_s.front() * 1000; }
  int64_t longest_window_ms() const { return windows_s.back() * 1000; }
};

/// Declares the process.* keys (defaults and help) in config.
void DeclareProcessConfig(core::Config& config);

/// Reads the process.* keys. Start-up boundary: a malformed value throws std::invalid_argument
/// naming the key.
ProcessOptions ProcessOptionsFromConfig(const core::Config& config);

}  // namespace acmetrace::processors

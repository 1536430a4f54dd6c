// The anomaly detector interface: every kind (gpu_overheat, xid_error, ...) is one implementation,
// registered in one visible list (MakeDetectors).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/record.h"
#include "acmetrace/processors/state_codec.h"

namespace acmetrace::processors {

/// One anomaly kind. Sees the input records in event-time order (late ones are dropped and
/// counted by the caller before they reach it) and, as the watermark advances, emits open and
/// close transitions with hysteresis. Event time only: never reads a clock. Not thread-safe.
class Detector {
 public:
  virtual ~Detector() = default;
  /// The kind id, exactly as published: "gpu_overheat", "xid_error", "telemetry_gap",
  /// "gpu_straggler", "util_drop", "failure_burst", "queue_backlog", "large_job_failure",
  /// "node_failure".
  virtual std::string_view kind() const = 0;
  /// Observes one record (acme.jobs, acme.util or acme.power).
  virtual void Observe(const core::Record& record) = 0;
  /// Everything up to watermark_ms has been observed: append the transitions it causes, in
  /// (ts_ms, subject) order, with ts_ms <= watermark_ms.
  virtual void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) = 0;

  /// Appends the state of cluster's subjects only (hysteresis, baselines, windows of history and the
  /// transitions not yet handed out by AdvanceTo), so a cluster's snapshot can move to another
  /// instance on its own.
  virtual void SaveState(std::string_view cluster, StateWriter& out) const = 0;
  /// Replaces the state of cluster's subjects with what SaveState wrote (other clusters' state is
  /// kept). Malformed input makes in.ok() false; the detector's state is then unspecified, so the
  /// caller drops it.
  virtual void LoadState(std::string_view cluster, StateReader& in) = 0;
  /// The layout SaveState writes, 1 and up; LoadState reads this one and older ones (the reader says
  /// which: in.version()). Kinds describe their state once (detectors/detector_support.h's
  /// DetectorWithState), so a new field is both saved and loaded; adding one bumps this.
  virtual uint32_t state_version() const { return 1; }
};

/// Declares every detector's keys (detect.<kind>.*: thresholds, windows, hysteresis) in config.
void DeclareDetectorConfig(core::Config& config);

/// Reads every enabled kind's settings from config now (start-up: a wrong value throws
/// std::invalid_argument "WHERE: KEY: reason") and returns what makes one cluster's detectors with
/// them, one per enabled kind in a fixed order. The factory reads no config and never throws, so it is
/// safe to call on the processor's thread whenever a cluster first appears.
std::function<std::vector<std::unique_ptr<Detector>>()> MakeDetectorFactory(const core::Config& config);

/// MakeDetectorFactory(config)(): one cluster's detectors.
std::vector<std::unique_ptr<Detector>> MakeDetectors(const core::Config& config);

}  // namespace acmetrace::processors

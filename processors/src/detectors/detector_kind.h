// How an anomaly kind registers itself: its id, the rule in one line, its config keys (name, default,
// help) and its factory. registry.cc lists every kind once; each kind's file defines its entry.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/processors/detector.h"

namespace acmetrace::processors::detectors {

/// One config key of a kind, declared as detect.<kind>.<name>. Literal type.
struct KeySpec {
  std::string_view name;
  std::string_view default_value;
  std::string_view help;
};

/// Reads a kind's keys (detect.<kind>.<name>) from the run's config. Value type.
class KindConfig {
 public:
  KindConfig(const core::Config& config, std::string_view kind) : config_(config), prefix_("detect.") {
    prefix_.append(kind);
    prefix_ += '.';
  }
  double Double(std::string_view name) const { return config_.GetDouble(Key(name)); }
  int64_t Int(std::string_view name) const { return config_.GetInt(Key(name)); }
  /// Seconds as milliseconds (keys named *_s).
  int64_t Millis(std::string_view name) const { return static_cast<int64_t>(Double(name) * 1000.0); }
  bool Bool(std::string_view name) const { return config_.GetBool(Key(name)); }
  std::vector<std::string> List(std::string_view name) const { return config_.GetList(Key(name)); }

 private:
  std::string Key(std::string_view name) const { return prefix_ + std::string(name); }
  const core::Config& config_;
  std::string prefix_;
};

/// A kind's entry in the registry. Literal type: defined with constant initialization in its file.
struct DetectorKind {
  std::string_view id;    // the published kind: "gpu_overheat", ...
  std::string_view rule;  // one line: what opens and closes a flag
  std::span<const KeySpec> keys;
  std::unique_ptr<Detector> (*make)(const KindConfig& config);
};

extern const DetectorKind kGpuOverheatKind;
extern const DetectorKind kXidErrorKind;
extern const DetectorKind kTelemetryGapKind;
extern const DetectorKind kGpuStragglerKind;
extern const DetectorKind kUtilDropKind;
extern const DetectorKind kFailureBurstKind;
extern const DetectorKind kQueueBacklogKind;
extern const DetectorKind kLargeJobFailureKind;
extern const DetectorKind kNodeFailureKind;

}  // namespace acmetrace::processors::detectors

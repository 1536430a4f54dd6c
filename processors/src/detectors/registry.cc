// The one list of anomaly kinds: each kind's keys are declared as detect.<kind>.*, plus
// detect.<kind>.enabled, and MakeDetectors builds the enabled ones in this order.
#include "acmetrace/processors/detector.h"
#include "detector_kind.h"

namespace acmetrace::processors {
namespace {

constexpr const detectors::DetectorKind* kKinds[] = {
    &detectors::kGpuOverheatKind,   &detectors::kXidErrorKind,      &detectors::kTelemetryGapKind,
    &detectors::kGpuStragglerKind,  &detectors::kUtilDropKind,      &detectors::kFailureBurstKind,
    &detectors::kQueueBacklogKind,  &detectors::kLargeJobFailureKind, &detectors::kNodeFailureKind,
};

std::string KeyOf(std::string_view kind, std::string_view name) {
  std::string key = "detect.";
  key.append(kind);
  key += '.';
  key.append(name);
  return key;
}

}  // namespace

void DeclareDetectorConfig(core::Config& config) {
  for (const detectors::DetectorKind* kind : kKinds) {
    config.Declare(KeyOf(kind->id, "enabled"), "true", "flag " + std::string(kind->id) + ": " + std::string(kind->rule));
    for (const detectors::KeySpec& key : kind->keys) {
      config.Declare(KeyOf(kind->id, key.name), std::string(key.default_value), std::string(key.help));
    }
  }
}

std::vector<std::unique_ptr<Detector>> MakeDetectors(const core::Config& config) {
  std::vector<std::unique_ptr<Detector>> out;
  for (const detectors::DetectorKind* kind : kKinds) {
    if (!config.GetBool(KeyOf(kind->id, "enabled"))) continue;
    out.push_back(kind->make(detectors::KindConfig(config, kind->id)));
  }
  return out;
}

}  // namespace acmetrace::processors

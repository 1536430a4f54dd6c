// The one list of anomaly kinds: each kind's keys are declared as detect.<kind>.*, plus
// detect.<kind>.enabled, and MakeDetectorFactory reads the enabled ones' settings at start-up and
// makes their detectors in this order.
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
    config.Declare(KeyOf(kind->id, "enabled"), "true", "flag " + std::string(kind->id) + ": " + std::string(kind->rule),
                   core::ConfigType::Bool());
    kind->declare(config, kind->id);
  }
}

std::function<std::vector<std::unique_ptr<Detector>>()> MakeDetectorFactory(const core::Config& config) {
  std::vector<detectors::KindFactory> kinds;
  for (const detectors::DetectorKind* kind : kKinds) {
    const std::string enabled = KeyOf(kind->id, "enabled");
    config.RequireValid(enabled);
    if (!config.GetBool(enabled)) continue;
    kinds.push_back(kind->configure(detectors::KindConfig(config, kind->id)));
  }
  return [kinds = std::move(kinds)] {
    std::vector<std::unique_ptr<Detector>> out;
    out.reserve(kinds.size());
    for (const detectors::KindFactory& make : kinds) out.push_back(make());
    return out;
  };
}

std::vector<std::unique_ptr<Detector>> MakeDetectors(const core::Config& config) {
  return MakeDetectorFactory(config)();
}

}  // namespace acmetrace::processors

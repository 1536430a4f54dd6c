// The keys of every stage and the whole-configuration check the binary runs at load.
#include "acmetrace/pipeline/config_keys.h"

#include <stdexcept>

#include "acmetrace/exporters/export_config.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/pipeline/run_config.h"
#include "acmetrace/producers/replay_config.h"
#include "acmetrace/producers/synth_config.h"
#include "acmetrace/remote_write/remote_write_config.h"

namespace acmetrace::pipeline {

void DeclareAllConfig(core::Config& config) {
  producers::DeclareReplayConfig(config);
  DeclareTransportConfig(config);
  producers::DeclareSynthConfig(config);
  processors::DeclareProcessConfig(config);
  processors::DeclareDetectorConfig(config);
  exporters::DeclareExportConfig(config);
  DeclareRunConfig(config);
  DeclareBackfillConfig(config);
  remote_write::DeclareRemoteWriteConfig(config);
  NarrowTransportKeys(config);
}

std::vector<std::string> CheckAllConfig(const core::Config& config) {
  std::vector<std::string> errors = config.Validate();
  if (!errors.empty()) return errors;  // the builders below would only repeat them
  // Each builder throws std::invalid_argument "WHERE: reason" at its first check across keys.
  // Kafka's settings are left to the commands that use Kafka: they read kafka.properties_file.
  auto check = [&errors](auto build) {
    try {
      build();
    } catch (const std::invalid_argument& e) {
      errors.emplace_back(e.what());
    }
  };
  check([&] { processors::ProcessOptionsFromConfig(config); });
  check([&] { processors::MakeDetectorFactory(config); });
  check([&] { exporters::ExportOptionsFromConfig(config); });
  check([&] { producers::SynthOptionsFromConfig(config); });
  return errors;
}

}  // namespace acmetrace::pipeline

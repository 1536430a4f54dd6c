// The list of subcommands and the shared config loading.
#include "commands.h"

#include <cstdio>

#include "acmetrace/core/log.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/producers/replay.h"
#include "acmetrace/producers/synth_config.h"

namespace acmetrace::apps {

void RegisterCommands(CLI::App& app, CommandRegistry& registry) {
  // Every stage declares its keys beside its code; they are all known to every subcommand so a
  // config file can hold every section.
  producers::DeclareReplayConfig(registry.config());
  kafka::DeclareKafkaConfig(registry.config());
  producers::DeclareSynthConfig(registry.config());
  processors::DeclareProcessConfig(registry.config());
  processors::DeclareDetectorConfig(registry.config());
  exporters::DeclareExportConfig(registry.config());
  pipeline::DeclareRunConfig(registry.config());
  app.add_option("--config", registry.config_file, "YAML configuration file (see `acmetrace config`)")
      ->check(CLI::ExistingFile);
  RegisterSynth(app, registry);
  RegisterSummary(app, registry);
  RegisterReplay(app, registry);
  RegisterProcess(app, registry);
  RegisterExport(app, registry);
  RegisterRun(app, registry);
  RegisterConfig(app, registry);
}

bool LoadConfig(CommandRegistry& registry, const std::vector<std::pair<std::string, std::string>>& overrides) {
  if (!registry.config_file.empty()) {
    if (core::Status s = registry.config().LoadYamlFile(registry.config_file); !s.ok()) {
      core::LogError("acmetrace", s.message());
      return false;
    }
  }
  for (const auto& [key, value] : overrides) {
    if (core::Status s = registry.config().Set(key, value); !s.ok()) {
      core::LogError("acmetrace", s.message());
      return false;
    }
  }
  return true;
}

void RegisterConfig(CLI::App& app, CommandRegistry& registry) {
  CLI::App* cmd = app.add_subcommand("config", "print every configuration key with its default and help, as YAML");
  cmd->callback([&registry] {
    registry.OnRun([&registry] {
      if (!LoadConfig(registry, {})) return 2;
      std::fputs(registry.config().DocumentedYaml().c_str(), stdout);
      return 0;
    });
  });
}

}  // namespace acmetrace::apps

// acmetrace process: the stream processors, from stdin (framed JSON lines) or Kafka, to stdout or
// Kafka (acme.metrics, acme.anomalies).
#include <atomic>
#include <chrono>
#include <cstdio>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/kafka/kafka_sink.h"
#include "acmetrace/pipeline/process_run.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/stream_processor.h"
#include "commands.h"
#include "shutdown_signal.h"

namespace acmetrace::apps {

void RegisterProcess(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string source, sink, brokers, group, state_dir;
    bool until_end = false;
    bool strict = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "process", "compute rolling cluster metrics (acme.metrics) and anomaly flags (acme.anomalies) in event time");
  cmd->add_option("--source", flags->source, "stdin (JSON lines, as replay --sink stdout writes) or kafka [process.source]");
  cmd->add_option("--sink", flags->sink, "stdout (JSON lines) or kafka [process.sink]");
  cmd->add_option("--brokers", flags->brokers, "Kafka bootstrap brokers host:port[,...] [kafka.brokers]");
  cmd->add_option("--group", flags->group, "consumer group: instances of one group share the clusters [kafka.group_id]");
  cmd->add_option("--state-dir", flags->state_dir, "directory of state snapshots for restarts [process.state_dir]");
  cmd->add_flag("--until-end", flags->until_end,
                "stop once everything in the input at start is consumed and every window it opened is closed "
                "(stdin always does)");
  cmd->add_flag("--strict", flags->strict, "exit 1 at the first malformed record");
  cmd->callback([&registry, flags] {
    registry.OnRun([&registry, flags] {
      std::vector<std::pair<std::string, std::string>> overrides;
      if (!flags->source.empty()) overrides.emplace_back("process.source", flags->source);
      if (!flags->sink.empty()) overrides.emplace_back("process.sink", flags->sink);
      if (!flags->brokers.empty()) overrides.emplace_back("kafka.brokers", flags->brokers);
      if (!flags->group.empty()) overrides.emplace_back("kafka.group_id", flags->group);
      if (!flags->state_dir.empty()) overrides.emplace_back("process.state_dir", flags->state_dir);
      if (!LoadConfig(registry, overrides)) return 2;
      const core::Config& config = registry.config();
      const processors::ProcessOptions options = processors::ProcessOptionsFromConfig(config);
      const std::string source = config.GetString("process.source");
      const std::string sink_name = config.GetString("process.sink");
      if (source != "stdin" && source != "kafka") {
        throw std::invalid_argument("process.source: expected stdin or kafka, got '" + source + "'");
      }
      if (sink_name != "stdout" && sink_name != "kafka") {
        throw std::invalid_argument("process.sink: expected stdout or kafka, got '" + sink_name + "'");
      }
      const bool uses_kafka = source == "kafka" || sink_name == "kafka";
      const std::optional<kafka::KafkaSettings> settings =
          uses_kafka ? std::optional(kafka::KafkaSettingsFromConfig(config)) : std::nullopt;

      // Signals first: every thread made after this (sink, processor, consumer) inherits their mask.
      std::atomic<bool> stop{false};
      ShutdownOnSignal shutdown([&stop] { stop.store(true); });
      std::unique_ptr<core::RecordSink> sink;
      if (sink_name == "stdout") {
        sink = std::make_unique<core::StdioSink>(stdout);
      } else {
        core::Result<std::unique_ptr<kafka::KafkaSink>> opened = kafka::KafkaSink::Open(*settings, stderr);
        if (!opened.ok()) {
          std::fprintf(stderr, "acmetrace process: %s\n", opened.status().message().c_str());
          return 1;
        }
        sink = std::move(opened).value();
      }
      processors::DetectorFactory detectors;
      if (options.detectors) {
        detectors = processors::MakeDetectorFactory(config);
      }
      processors::StreamProcessor processor(options, *sink, detectors);
      core::InputErrors errors(stderr, flags->strict);
      const auto started = std::chrono::steady_clock::now();
      int rc = source == "stdin" ? pipeline::RunProcessStdin(processor, *sink, errors, stop)
                                 : pipeline::RunProcessKafka(processor, *sink, errors, options, *settings,
                                                             flags->until_end, stop);
      errors.Finish();
      if (core::Status s = sink->Flush(); !s.ok() && rc == 0) {
        std::fprintf(stderr, "acmetrace process: %s\n", s.message().c_str());
        rc = 1;
      }
      const auto wall = std::chrono::steady_clock::now() - started;
      pipeline::PrintProcessSummary(processor.stats(), errors,
                                    std::chrono::duration_cast<std::chrono::milliseconds>(wall).count());
      return rc;
    });
  });
}

}  // namespace acmetrace::apps

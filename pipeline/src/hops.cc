// What every transport shares (the registry's look-ups, the defaults of Transport), and each
// stage's hops described once and made by the transports its configuration names.
#include "acmetrace/pipeline/hops.h"

#include <stdexcept>

#include "acmetrace/pipeline/run_config.h"

namespace acmetrace::pipeline {
namespace {

// The transport whose reads_as (or writes_as) is name, from the configuration key that named it.
const TransportKind& EndpointKind(const core::Config& config, const std::string& key, bool reads) {
  const std::string name = config.GetString(key);
  for (const TransportKind* kind : TransportKinds()) {
    if ((reads ? kind->reads_as : kind->writes_as) == name && !name.empty()) return *kind;
  }
  throw std::invalid_argument(config.Where(key) + ": no transport " + (reads ? "reads" : "writes") + " as '" + name + "'");
}

// One transport per kind for a stage whose input and output name the same one (process over Kafka).
core::Result<Transport*> TransportOf(WiredStage& stage, std::vector<const TransportKind*>& made,
                                     const TransportKind& kind, const core::Config& config) {
  for (size_t i = 0; i < made.size(); ++i) {
    if (made[i] == &kind) return stage.transports[i].get();
  }
  core::Result<std::unique_ptr<Transport>> transport = kind.make(config, stderr);
  if (!transport.ok()) return transport.status();
  made.push_back(&kind);
  stage.transports.push_back(std::move(transport).value());
  return stage.transports.back().get();
}

std::vector<std::string> NamesWith(std::string_view TransportKind::*field) {
  std::vector<std::string> names;
  for (const TransportKind* kind : TransportKinds()) {
    if (!(kind->*field).empty()) names.emplace_back(kind->*field);
  }
  return names;
}

}  // namespace

const TransportKind* FindTransport(std::string_view name) {
  for (const TransportKind* kind : TransportKinds()) {
    if (kind->name == name) return kind;
  }
  return nullptr;
}

void DeclareTransportConfig(core::Config& config) {
  for (const TransportKind* kind : TransportKinds()) {
    if (kind->declare != nullptr) kind->declare(config);
  }
}

void NarrowTransportKeys(core::Config& config) {
  const std::vector<std::string> readers = NamesWith(&TransportKind::reads_as);
  const std::vector<std::string> writers = NamesWith(&TransportKind::writes_as);
  config.SetChoices("process.source", readers);
  config.SetChoices("export.source", readers);
  config.SetChoices("process.sink", writers);
  config.SetChoices("replay.sink", writers);
  std::vector<std::string> run;
  for (const TransportKind* kind : TransportKinds()) {
    if (kind->in_one_process) run.emplace_back(kind->name);
  }
  config.SetChoices("run.transport", run);
}

const std::vector<std::string>& ProcessInputTopics() {
  static const std::vector<std::string> topics = {std::string(core::kTopicJobs), std::string(core::kTopicUtil),
                                                  std::string(core::kTopicPower)};
  return topics;
}

const std::vector<std::string>& ExportInputTopics() {
  static const std::vector<std::string> topics = {std::string(core::kTopicUtil), std::string(core::kTopicMetrics),
                                                  std::string(core::kTopicAnomalies)};
  return topics;
}

const std::vector<std::string>& ProcessOutputTopics() {
  static const std::vector<std::string> topics = {std::string(core::kTopicMetrics), std::string(core::kTopicAnomalies)};
  return topics;
}

core::Result<std::unique_ptr<ClusterOwnership>> Transport::Ownership(const InputHop&, const processors::ProcessOptions&,
                                                                     core::RecordSink&,
                                                                     std::function<void(const std::string&)>) {
  return std::unique_ptr<ClusterOwnership>(std::make_unique<OwnAllClusters>());
}

StageOptions Transport::EndOfInput(bool until_end) const {
  StageOptions options;
  options.until_end = until_end;
  return options;
}

namespace {

// The stage's input from transport, and how it ends.
core::Status ReadFrom(WiredStage& stage, Transport& transport, const InputHop& hop, bool until_end) {
  core::Result<std::unique_ptr<core::RecordInput>> input = transport.Reader(hop);
  if (!input.ok()) return input.status();
  stage.input = std::move(input).value();
  stage.options = transport.EndOfInput(until_end);
  return core::Status::Ok();
}

// The stage's sink to transport.
core::Status WriteTo(WiredStage& stage, Transport& transport, const OutputHop& hop) {
  core::Result<std::unique_ptr<core::RecordSink>> sink = transport.Writer(hop);
  if (!sink.ok()) return sink.status();
  stage.sink = std::move(sink).value();
  return core::Status::Ok();
}

}  // namespace

core::Result<WiredStage> WireProcessStage(const core::Config& config, const processors::ProcessOptions& options,
                                          bool until_end, std::function<void(const std::string&)> log) {
  const TransportKind& source = EndpointKind(config, "process.source", /*reads=*/true);
  const TransportKind& sink = EndpointKind(config, "process.sink", /*reads=*/false);
  WiredStage stage;
  std::vector<const TransportKind*> made;
  core::Result<Transport*> out = TransportOf(stage, made, sink, config);
  if (!out.ok()) return out.status();
  core::Result<Transport*> in = TransportOf(stage, made, source, config);
  if (!in.ok()) return in.status();
  // The sink first: a group's snapshots flush it, so the ownership is made with it.
  if (core::Status s = WriteTo(stage, *out.value(), OutputHop{ProcessOutputTopics(), false}); !s.ok()) return s;
  InputHop hop;
  hop.topics = ProcessInputTopics();
  hop.ownership = InputHop::Ownership::kShared;
  hop.create_topics = true;
  if (core::Status s = ReadFrom(stage, *in.value(), hop, until_end); !s.ok()) return s;
  core::Result<std::unique_ptr<ClusterOwnership>> ownership =
      in.value()->Ownership(hop, options, *stage.sink, std::move(log));
  if (!ownership.ok()) return ownership.status();
  stage.ownership = std::move(ownership).value();
  return stage;
}

core::Result<WiredStage> WireExportStage(const core::Config& config, bool until_end) {
  WiredStage stage;
  std::vector<const TransportKind*> made;
  core::Result<Transport*> in =
      TransportOf(stage, made, EndpointKind(config, "export.source", /*reads=*/true), config);
  if (!in.ok()) return in.status();
  InputHop hop;
  hop.topics = ExportInputTopics();
  if (core::Status s = ReadFrom(stage, *in.value(), hop, until_end); !s.ok()) return s;
  return stage;
}

core::Result<WiredStage> WireReplayStage(const core::Config& config) {
  WiredStage stage;
  std::vector<const TransportKind*> made;
  core::Result<Transport*> out = TransportOf(stage, made, EndpointKind(config, "replay.sink", /*reads=*/false), config);
  if (!out.ok()) return out.status();
  if (core::Status s = WriteTo(stage, *out.value(), OutputHop{ProcessInputTopics(), true}); !s.ok()) return s;
  return stage;
}

core::Result<std::unique_ptr<Transport>> MakeRunTransport(const core::Config& config) {
  const std::string name = RunSettingsFromConfig(config).transport;
  const TransportKind* kind = FindTransport(name);
  if (kind == nullptr || !kind->in_one_process) {
    throw std::invalid_argument(config.Where("run.transport") + ": no transport makes hops in one process as '" + name + "'");
  }
  return kind->make(config, stderr);
}

}  // namespace acmetrace::pipeline

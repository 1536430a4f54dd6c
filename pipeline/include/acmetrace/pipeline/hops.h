// The hops between stages, made by transports from one registry: a stage describes the input and
// the output it needs (topics, where reading starts, cluster ownership, whether its records come in
// trace-time order), and the transport named in the configuration makes them.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/status.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/pipeline/stages.h"
#include "acmetrace/processors/process_config.h"

namespace acmetrace::pipeline {

/// A stage's input, described once: what it reads and from where. Value type.
struct InputHop {
  std::vector<std::string> topics;
  /// Where reading starts: every partition's beginning, or where it ends when the input is made
  /// (only what is written afterwards: `acmetrace run` reads just its own run).
  enum class Start { kBeginning, kEnd } start = Start::kBeginning;
  /// Which clusters a process stage owns: every one (run, one process), or a share of them among the
  /// instances of a group, resumed from state snapshots, where the transport has groups (Kafka's
  /// consumer group; a transport without groups gives every cluster).
  enum class Ownership { kAll, kShared } ownership = Ownership::kAll;
  /// Missing topics are made first (where the transport has topics to make and its settings allow).
  bool create_topics = false;
};

/// A stage's output, described once. Value type.
struct OutputHop {
  std::vector<std::string> topics;
  /// The writer's records come in trace-time order (the replay): it tells readers how far it has
  /// got (progress markers). Every writer tells them when it ends (End).
  bool ordered = false;
};

/// Makes the two ends of hops: a record written to a writer reaches every reader of its topic
/// (made by this transport, or by one of the same kind in another process). Readers are made
/// before writers (a reader made with Start::kEnd reads what is written after it). To add a
/// transport, implement this class in a file of pipeline/src/transports/ and list its TransportKind
/// in registry.cc: the stage runners, Pipeline and every command take it unchanged. Not
/// thread-safe (made on one thread; its sinks and inputs say what they allow).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual core::Result<std::unique_ptr<core::RecordInput>> Reader(const InputHop& hop) = 0;
  virtual core::Result<std::unique_ptr<core::RecordSink>> Writer(const OutputHop& hop) = 0;
  /// The process stage's cluster ownership for an input made by Reader(hop). Every cluster unless
  /// the hop shares them and the transport has groups (Kafka); sink: where the stage writes (a
  /// group's snapshots flush it first); log: one line per event worth telling.
  virtual core::Result<std::unique_ptr<ClusterOwnership>> Ownership(const InputHop& hop,
                                                                     const processors::ProcessOptions& options,
                                                                     core::RecordSink& sink,
                                                                     std::function<void(const std::string&)> log);
  /// How a stage's read loop over this transport's input ends (StageOptions: until_end,
  /// unmarked_end_after_ms). until_end: the user asked to stop at the input's end; an input that
  /// always ends (a file read once, stdin) ends there anyway.
  virtual StageOptions EndOfInput(bool until_end) const;
  /// Ends every blocked read and write at once (Pipeline::Stop). Thread-safe.
  virtual void Cancel() {}
};

/// One kind of transport in the registry. Literal type: defined with constant initialization in its
/// file of pipeline/src/transports/.
struct TransportKind {
  std::string_view name;       // as `acmetrace run` and the tests name it: in-process, stdio, kafka, file
  std::string_view reads_as;   // its name as a stage's source (process.source, export.source); "": it cannot be one
  std::string_view writes_as;  // its name as a stage's sink (process.sink, replay.sink); "": it cannot be one
  std::string_view help;       // one line: what it is
  bool in_one_process;  // its readers read what writers of the same process write: `acmetrace run` can use it
  bool can_seek;        // its inputs read again from an offset (a restart resumes there)
  /// Declares its settings (its own section: kafka.*, file.*); nullptr: none.
  void (*declare)(core::Config& config);
  /// Makes one from the loaded configuration (start-up: a bad setting throws std::invalid_argument
  /// naming the key). log: where its clients report.
  core::Result<std::unique_ptr<Transport>> (*make)(const core::Config& config, std::FILE* log);
};

/// TransportKind::make for a transport with no settings: a default-constructed T.
template <class T>
core::Result<std::unique_ptr<Transport>> MakeDefaultTransport(const core::Config&, std::FILE*) {
  return std::unique_ptr<Transport>(std::make_unique<T>());
}

/// Every registered transport, in registry order.
const std::vector<const TransportKind*>& TransportKinds();
/// The transport named name (TransportKind::name); nullptr if none.
const TransportKind* FindTransport(std::string_view name);
/// Declares every transport's settings (their own sections: kafka.*, file.*).
void DeclareTransportConfig(core::Config& config);
/// Narrows the stages' source and sink keys, once every stage has declared them (process.source,
/// process.sink, export.source, replay.sink, run.transport), to the registered names.
void NarrowTransportKeys(core::Config& config);

/// The topics the processors read, and those the exporter reads.
const std::vector<std::string>& ProcessInputTopics();
const std::vector<std::string>& ExportInputTopics();
/// The topics the processors write.
const std::vector<std::string>& ProcessOutputTopics();

/// A stage's ends, made by the transports its configuration names, and what they are made of (kept
/// alive with them). Move-only.
struct WiredStage {
  std::vector<std::unique_ptr<Transport>> transports;
  std::unique_ptr<core::RecordInput> input;            // process, export
  std::unique_ptr<ClusterOwnership> ownership;         // process
  std::unique_ptr<core::RecordSink> sink;              // replay, process
  StageOptions options;                                // process, export: how the input ends
};

/// `acmetrace process`: its input from the transport process.source names (the processors'
/// topics from the beginning, clusters shared by a group where the transport has groups) and its
/// output to process.sink's (acme.metrics, acme.anomalies). Start-up: a bad setting throws
/// std::invalid_argument naming the key; a transport that cannot be reached is an error.
core::Result<WiredStage> WireProcessStage(const core::Config& config, const processors::ProcessOptions& options,
                                          bool until_end, std::function<void(const std::string&)> log);
/// `acmetrace export`: its input from export.source's transport (the exporter's topics from the
/// beginning: its state is rebuilt from them, whatever an earlier instance had read).
core::Result<WiredStage> WireExportStage(const core::Config& config, bool until_end);
/// `acmetrace replay`: its output to replay.sink's transport (the processors' topics, in trace-time order).
core::Result<WiredStage> WireReplayStage(const core::Config& config);

/// The transport of `acmetrace run`'s hops: run.transport's kind.
core::Result<std::unique_ptr<Transport>> MakeRunTransport(const core::Config& config);

}  // namespace acmetrace::pipeline

// The stages wired together in one process: replay -> processors -> exporter over in-process
// queues (`acmetrace run`), and the exporter's own input loops (`acmetrace export`: stdin or Kafka).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/in_process_queue.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/stream_processor.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::pipeline {

/// Declares the run.* keys (the embedded default data set, queue sizes).
void DeclareRunConfig(core::Config& config);

/// Counts the records a stage writes into acmetrace_records_total{stage,topic} (and their event
/// time into acmetrace_replay_trace_time_seconds), and forwards each to its outputs. Counts reach
/// the exporter every 1024 records and at Flush. Not thread-safe: one writing stage.
class CountingTee : public core::RecordSink {
 public:
  using Filter = std::function<bool(const core::Record&)>;
  CountingTee(std::string stage, exporters::Exporter& exporter, bool note_trace_time);
  ~CountingTee() override;
  /// Forwards records (those filter accepts, or all) to out, which must outlive the tee.
  void AddOutput(core::RecordSink& out, Filter filter = {});
  core::Status Write(const core::Record& record) override;
  core::Status Flush() override;

 private:
  void Publish();
  std::string stage_;
  exporters::Exporter& exporter_;
  bool note_trace_time_;
  std::vector<std::pair<core::RecordSink*, Filter>> outputs_;
  std::map<std::string, int64_t, std::less<>> pending_counts_;
  std::map<std::string, int64_t, std::less<>> trace_ms_;
  int64_t unpublished_ = 0;
};

/// What an in-process run needs. Value type.
struct PipelineOptions {
  producers::EventStreamOptions stream;
  producers::ReplayOptions replay;
  processors::ProcessOptions process;
  processors::DetectorFactory detectors;  // empty = no detectors
  size_t queue_capacity = 4096;           // records per queue (memory bound, backpressure beyond)
};

/// replay -> processors -> exporter over in-process queues (the embedded default): the replay
/// thread writes every record to the processors' queue and acme.util records (the persona) to the
/// exporter's queue; the processor thread writes acme.metrics and acme.anomalies to the exporter's
/// queue; Run's thread applies the exporter's queue. Backpressure: a full queue blocks its writer.
/// Run on one thread; Stop and replay_status from any thread.
class InProcessPipeline {
 public:
  InProcessPipeline(PipelineOptions options, exporters::Exporter& exporter, core::InputErrors& errors);
  ~InProcessPipeline();
  /// Blocks until everything is replayed, processed and exported, or Stop(). Fails if the data
  /// directory cannot be opened or a stage fails.
  core::Status Run();
  /// Ends Run early (what was replayed is processed no further). Thread-safe.
  void Stop();
  /// The replay's progress (speed, lag, trace time). Thread-safe.
  producers::ReplayStatus replay_status() const;
  const processors::ProcessStats& process_stats() const { return process_stats_; }
  int64_t exported() const { return exported_.load(); }

 private:
  PipelineOptions options_;
  exporters::Exporter& exporter_;
  core::InputErrors& errors_;
  core::InProcessQueue to_process_;
  core::InProcessQueue to_export_;
  mutable std::mutex mutex_;  // guards replayer_ (created and destroyed by Run)
  producers::Replayer* replayer_ = nullptr;
  std::atomic<bool> stop_{false};
  processors::ProcessStats process_stats_;
  std::atomic<int64_t> exported_{0};
};

/// Reads framed JSON lines (the stdio transport) from in and applies each to the exporter until
/// the end of the input or stop. A malformed line is reported ("stdin:LINE: ...") and counted in
/// acmetrace_input_errors_total{kind="record"}, never fatal (strict errors stop). Fails on a read
/// error.
core::Status ExportFromStdio(std::FILE* in, const std::string& name, exporters::Exporter& exporter,
                             core::InputErrors& errors, const std::atomic<bool>& stop);

/// Consumes acme.util, acme.metrics and acme.anomalies from Kafka (consumer group
/// settings.group_id) into the exporter until stop, or with until_end until every partition is
/// read to its end. Malformed records are reported and counted.
core::Status ExportFromKafka(const kafka::KafkaSettings& settings, bool until_end, exporters::Exporter& exporter,
                             core::InputErrors& errors, const std::atomic<bool>& stop);

}  // namespace acmetrace::pipeline

namespace acmetrace::pipeline {

/// The embedded default data set of `acmetrace run` without --data: run.default_days of both
/// clusters at run.default_scale with injected faults, synthesized once into run.cache_dir (or
/// $XDG_CACHE_HOME/acmetrace, ~/.cache/acmetrace) and reused. Returns the data directory.
core::Result<std::string> PrepareDefaultData(const core::Config& config, std::FILE* log);

}  // namespace acmetrace::pipeline

namespace acmetrace::pipeline {

/// A one-way stop signal a thread can wait on (SIGINT/SIGTERM, the end of a run). Thread-safe.
class StopLatch {
 public:
  void Trigger();
  bool triggered() const { return flag_.load(); }
  /// The flag for loops that poll it.
  const std::atomic<bool>& flag() const { return flag_; }
  /// Waits until triggered or timeout_ms passed; returns triggered().
  bool WaitFor(int64_t timeout_ms);

 private:
  std::atomic<bool> flag_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
};

/// Writes exporter's full exposition text to path (a temporary file renamed into place).
core::Status WriteExposition(exporters::Exporter& exporter, const std::string& path);

}  // namespace acmetrace::pipeline

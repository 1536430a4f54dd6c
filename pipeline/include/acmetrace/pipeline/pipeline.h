// The stages wired together in one process (`acmetrace run`) over any Transport, and what the
// commands share: the run.* keys, the embedded default data set, a stop latch, the exposition file.
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
#include "acmetrace/core/transport.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/pipeline/run_config.h"
#include "acmetrace/pipeline/stages.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/stream_processor.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::pipeline {

/// Counts the records a stage writes into acmetrace_records_total{stage,topic} (and their event
/// time into acmetrace_replay_trace_time_seconds), and forwards each to out. Counts reach the
/// exporter every 1024 records and at Flush and End; every other call goes to out as it is. Not
/// thread-safe: one writing stage.
class CountingTee : public core::RecordSink {
 public:
  CountingTee(std::string stage, exporters::Exporter& exporter, bool note_trace_time, core::RecordSink& out);
  ~CountingTee() override;
  core::Status Write(const core::Record& record) override;
  core::Status Flush() override;
  core::Status Send() override;
  core::Status Prepare(int64_t first_trace_ts_ms) override;
  core::Status Heartbeat(int64_t trace_ts_ms, bool paused) override;
  core::Status End(const std::vector<std::string>& clusters) override;

 private:
  void Publish();
  std::string stage_;
  exporters::Exporter& exporter_;
  bool note_trace_time_;
  core::RecordSink& out_;
  std::map<std::string, int64_t, std::less<>> pending_counts_;
  std::map<std::string, int64_t, std::less<>> trace_ms_;
  int64_t unpublished_ = 0;
};

/// What a run needs. Value type.
struct PipelineOptions {
  producers::EventStreamOptions stream;
  producers::ReplayOptions replay;
  processors::ProcessOptions process;
  processors::DetectorFactory detectors;  // empty = no detectors
};

/// `acmetrace run`: replay -> processors -> exporter, three threads of one process, every hop made
/// by the transport (in-process queues, or Kafka topics). The replay writes acme.jobs, acme.util
/// and acme.power; the processors (RunProcessStage, every cluster) read those and write
/// acme.metrics and acme.anomalies; the exporter (RunExportStage) reads acme.util, acme.metrics
/// and acme.anomalies. Each stage ends its output stream when done, so the next one knows its input
/// ended; the same stage code runs over either transport. Run on one thread; Stop and
/// replay_status from any thread.
class Pipeline {
 public:
  Pipeline(PipelineOptions options, Transport& transport, exporters::Exporter& exporter, core::InputErrors& errors);
  ~Pipeline();
  /// Blocks until everything is replayed, processed and exported, or Stop(). Fails if the data
  /// directory cannot be opened, a hop cannot be made or a stage fails.
  core::Status Run();
  /// Ends Run early (what was replayed is processed no further). Thread-safe.
  void Stop();
  /// The replay's progress (speed, lag, trace time). Thread-safe.
  producers::ReplayStatus replay_status() const;
  /// What the processors did; valid once Run returned.
  const processors::ProcessStats& process_stats() const { return process_stats_; }

 private:
  PipelineOptions options_;
  Transport& transport_;
  exporters::Exporter& exporter_;
  core::InputErrors& errors_;
  mutable std::mutex mutex_;  // guards replayer_ (created and destroyed by Run)
  producers::Replayer* replayer_ = nullptr;
  std::atomic<bool> stop_{false};            // any stage stops: Stop() or a failure
  std::atomic<bool> stop_requested_{false};  // Stop() was called
  processors::ProcessStats process_stats_;
};

}  // namespace acmetrace::pipeline

namespace acmetrace::pipeline {

/// The embedded default data set of `acmetrace run` without --data: run.default_days of both
/// clusters at run.default_scale with injected faults, synthesized once into run.cache_dir (or
/// $XDG_CACHE_HOME/acmetrace, ~/.cache/acmetrace) and reused. Returns the data directory.
/// log gets one line when it synthesizes.
core::Result<std::string> PrepareDefaultData(const core::Config& config,
                                             const std::function<void(const std::string&)>& log);

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

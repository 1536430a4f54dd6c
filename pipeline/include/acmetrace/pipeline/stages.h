// The two stage runners, written once for every transport: process (input -> processors -> sink)
// and export (input -> exporter). Parse errors, partition ends, idleness, offsets, cluster
// ownership and the end of the input live here; inputs and sinks only move records.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/status.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/processors/stream_processor.h"

namespace acmetrace::pipeline {

/// What a running stage reports now and then (the app prints it). Value type.
struct StageProgress {
  int64_t items = 0;                        // records and markers read so far
  std::vector<std::string> watermarks;      // "cluster=ISO time" of the owned clusters (process)
  bool writer_paused = false;               // the newest progress marker said its writer is paused
};

/// How a stage runner ends. Value type.
struct StageOptions {
  /// Return once the input has ended: every writer ended its stream (end markers, a queue's or a
  /// file's end). A partition that never carried a stream marker (written by another tool) counts as
  /// ended once it has been idle for unmarked_end_after_ms; a quiet or paused writer with markers
  /// never does. Without until_end, follow the input until stop: a process stage still closes every
  /// window when its input ends, as the end of a file does.
  bool until_end = true;
  /// How long a partition without markers must have been idle (after the input reported it idle)
  /// to count as ended (kafka.unmarked_end_timeout_ms).
  int64_t unmarked_end_after_ms = 600'000;
  /// Called about every progress_interval_ms of wall time (0: never).
  std::function<void(const StageProgress&)> on_progress;
  int64_t progress_interval_ms = 0;
};

/// Which clusters a process stage processes and from where its input is read: all of them from
/// the start (OwnAllClusters), or those a consumer group gives this instance, resumed from state
/// snapshots (GroupOwnership, Kafka). Called from the stage's thread only.
class ClusterOwnership {
 public:
  virtual ~ClusterOwnership() = default;
  /// Before the first read: the processor's partitions are declared (index = the input's).
  virtual core::Status Start(processors::StreamProcessor& processor, core::RecordInput& input) = 0;
  /// Every turn of the loop: serves the group (adopting and releasing clusters, seeking the input
  /// where the owned clusters' snapshots resume). False while the input must not be read yet.
  virtual core::Result<bool> Poll(int64_t now_ms) = 0;
  /// A record of cluster, not owned: adopts it if it is this instance's.
  virtual core::Status Consider(std::string_view cluster) = 0;
  /// When Checkpoint saves.
  enum class Save {
    kIfDue,            // if the snapshot interval has passed since the last save
    kNow,              // at once (the stage stops)
    kBeforeFinishing,  // at once, noting that every open window is about to be closed and written
  };
  /// Saves what the owned clusters' state covers (snapshots, group offsets).
  virtual core::Status Checkpoint(int64_t now_ms, Save when) = 0;
  /// The stage ends (after a last Checkpoint): leaves the group.
  virtual core::Status Close() = 0;
};

/// Every cluster, from the start of the input; nothing saved. `acmetrace run`, stdin.
class OwnAllClusters : public ClusterOwnership {
 public:
  core::Status Start(processors::StreamProcessor& processor, core::RecordInput& input) override;
  core::Result<bool> Poll(int64_t) override { return true; }
  core::Status Consider(std::string_view) override { return core::Status::Ok(); }
  core::Status Checkpoint(int64_t, Save) override { return core::Status::Ok(); }
  core::Status Close() override { return core::Status::Ok(); }
};

/// input -> processor -> sink until the input ends (see StageOptions) or stop. When the input
/// ends, every window closes (StreamProcessor::Finish) and the sink's stream ends (End, naming the
/// owned clusters). A bad record is reported to errors by its place and skipped; with strict
/// errors the stage stops with an error. Fails on an input, processor or sink failure.
core::Status RunProcessStage(core::RecordInput& input, processors::StreamProcessor& processor, core::RecordSink& sink,
                             core::InputErrors& errors, ClusterOwnership& ownership, const StageOptions& options,
                             const std::atomic<bool>& stop);

/// input -> exporter until the input ends (see StageOptions) or stop. A bad record is reported
/// and skipped.
core::Status RunExportStage(core::RecordInput& input, exporters::Exporter& exporter, core::InputErrors& errors,
                            const StageOptions& options, const std::atomic<bool>& stop);

}  // namespace acmetrace::pipeline

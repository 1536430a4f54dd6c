// `acmetrace run --brokers`: the same three stages in one process, every hop through Kafka.
#pragma once

#include <atomic>
#include <mutex>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/pipeline/pipeline.h"

namespace acmetrace::pipeline {

/// replay -> Kafka (acme.jobs/util/power) -> processors -> Kafka (acme.metrics/anomalies) ->
/// exporter, three threads of one process. Each reader starts at the ends the topics had when the
/// run started, so records of earlier runs in the same topics are not read again; the processors
/// keep one watermark per input partition. With the replay done and delivered, the processors read
/// to the input topics' ends, close every window and deliver; then the exporter reads to the output
/// topics' ends and Run returns. Run on one thread; Stop and replay_status from any thread.
class KafkaPipeline {
 public:
  KafkaPipeline(PipelineOptions options, kafka::KafkaSettings settings, exporters::Exporter& exporter,
                core::InputErrors& errors);
  ~KafkaPipeline();
  core::Status Run();
  void Stop();
  producers::ReplayStatus replay_status() const;
  const processors::ProcessStats& process_stats() const { return process_stats_; }

 private:
  core::Status Process();
  core::Status Export();

  PipelineOptions options_;
  kafka::KafkaSettings settings_;
  exporters::Exporter& exporter_;
  core::InputErrors& errors_;
  mutable std::mutex mutex_;
  producers::Replayer* replayer_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<bool> replay_done_{false};   // replayed and delivered: the processors may drain
  std::atomic<bool> process_done_{false};  // processed and delivered: the exporter may drain
  processors::ProcessStats process_stats_;
};

}  // namespace acmetrace::pipeline

// Transports that make the hops between stages of one process: a writer (RecordSink) of some
// topics and readers (RecordInput) of some topics, over in-process queues or Kafka.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/in_process_queue.h"
#include "acmetrace/core/status.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/kafka/kafka_config.h"

namespace acmetrace::pipeline {

/// Makes the two ends of hops by topic: a record written to a writer reaches every reader of its
/// topic. Readers are made before writers (a Kafka reader starts where the topics end then). To add
/// a transport, implement this class: the stage runners and Pipeline take any. Not thread-safe
/// (made on one thread; its sinks and inputs say what they allow).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual core::Result<std::unique_ptr<core::RecordInput>> Reader(const std::vector<std::string>& topics) = 0;
  /// ordered: the writer's records come in trace-time order (the replay), so it can tell readers
  /// how far it has got (Kafka progress markers).
  virtual core::Result<std::unique_ptr<core::RecordSink>> Writer(const std::vector<std::string>& topics,
                                                                 bool ordered) = 0;
  /// Ends every blocked read and write at once (Pipeline::Stop). Thread-safe.
  virtual void Cancel() = 0;
};

/// Bounded in-process queues, one per reader: a writer copies each record into the queue of every
/// reader of its topic (a full queue blocks it: backpressure, no loss); a reader's stream ends when
/// all its writers ended.
class InProcessTransport : public Transport {
 public:
  explicit InProcessTransport(size_t queue_capacity) : capacity_(queue_capacity) {}
  core::Result<std::unique_ptr<core::RecordInput>> Reader(const std::vector<std::string>& topics) override;
  core::Result<std::unique_ptr<core::RecordSink>> Writer(const std::vector<std::string>& topics, bool ordered) override;
  void Cancel() override;

 private:
  struct Queue {
    std::vector<std::string> topics;
    std::unique_ptr<core::InProcessQueue> queue;
  };
  size_t capacity_;
  std::vector<Queue> queues_;
};

/// Kafka topics (created first when missing, with kafka.create_topics): readers read every
/// partition of their topics from where they end when the reader is made (so a run reads only what it writes itself) with kafka.idle_timeout_ms; writers are
/// KafkaSinks of a declared stream (end markers; progress markers every
/// kafka.progress_interval_ms of trace time for an ordered writer).
class KafkaTransport : public Transport {
 public:
  /// log: where the Kafka clients report (topics created, broker errors).
  KafkaTransport(kafka::KafkaSettings settings, std::FILE* log) : settings_(std::move(settings)), log_(log) {}
  core::Result<std::unique_ptr<core::RecordInput>> Reader(const std::vector<std::string>& topics) override;
  core::Result<std::unique_ptr<core::RecordSink>> Writer(const std::vector<std::string>& topics, bool ordered) override;
  void Cancel() override {}  // its reads and writes time out by themselves

 private:
  core::Status EnsureTopics();
  kafka::KafkaSettings settings_;
  std::FILE* log_;
  bool topics_ensured_ = false;
};

/// The topics the processors read, and those the exporter reads.
const std::vector<std::string>& ProcessInputTopics();
const std::vector<std::string>& ExportInputTopics();

}  // namespace acmetrace::pipeline

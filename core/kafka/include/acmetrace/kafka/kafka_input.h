// The Kafka side of core::RecordInput: every partition of some topics, read by assignment.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/transport.h"
#include "acmetrace/kafka/kafka_config.h"

namespace acmetrace::kafka {

/// What a KafkaInput reads. Value type.
struct KafkaInputOptions {
  std::vector<std::string> topics;
  /// Where reading starts: every partition's beginning, or its end at Open (only what is written
  /// afterwards: `acmetrace run --brokers` reads just its own run).
  enum class Start { kBeginning, kEnd } start = Start::kBeginning;
  /// A partition read to its end that delivers nothing (no record, no marker) for this long is
  /// reported idle once (0: never), as Flink's withIdleness: the watermark stops waiting for it.
  int64_t idle_timeout_ms = 30'000;
};

/// Every partition of the options' topics (sorted by topic, then partition; named "topic/N"),
/// merged in trace-time order (KafkaPartitionReader). Records come as kFramed; stream markers
/// (kafka_message.h) as kProgress and kEnded; a partition's end as kCaughtUp; idleness as kIdle.
/// No consumer group: offsets are the reader's to keep (Seek). Not thread-safe.
class KafkaInput : public core::RecordInput {
 public:
  /// Connects within kafka.connect_timeout_ms; the topics must exist.
  // Open, destructor, no copies: the RAII owner shape of every librdkafka wrapper here (KafkaSource too).
  static core::Result<std::unique_ptr<KafkaInput>> Open(const KafkaSettings& settings, KafkaInputOptions options,
                                                        std::FILE* log = stderr);
  ~KafkaInput() override;
  KafkaInput(const KafkaInput&) = delete;
  KafkaInput& operator=(const KafkaInput&) = delete;

  const std::vector<core::InputPartition>& partitions() const override;
  core::Result<core::InputItem> Next(int timeout_ms) override;
  core::Status Seek(const std::vector<int64_t>& next_offsets) override;
  core::Status Pause(int partition) override;
  /// Each partition's end (the offset its next record gets) now.
  core::Result<std::vector<int64_t>> Ends();

 private:
  struct Impl;
  explicit KafkaInput(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace acmetrace::kafka

// Topic administration: create the feed's topics when missing, and describe them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/kafka/kafka_config.h"

namespace acmetrace::kafka {

/// A topic as it should be created. Value type.
struct TopicSpec {
  std::string name;
  int32_t partitions = -1;          // -1 = broker default
  int32_t replication_factor = -1;  // -1 = broker default
  int64_t retention_ms = -1;        // -1 = forever
};

/// A topic as the cluster has it. Value type.
struct TopicDescription {
  std::string name;
  bool created = false;  // by this call (EnsureTopics)
  int32_t partitions = 0;
  std::string retention_ms;  // the topic's retention.ms config value ("" if not asked)
};

/// The settings' kafka.topics with their partitions, replication factor and retention.
std::vector<TopicSpec> TopicSpecsFromSettings(const KafkaSettings& settings);

/// A short-lived admin client (a librdkafka producer handle used for the Admin API). Not thread-safe.
class KafkaAdmin {
 public:
  /// Connects (bounded by kafka.connect_timeout_ms). log receives librdkafka's errors.
  static core::Result<std::unique_ptr<KafkaAdmin>> Open(const KafkaSettings& settings, std::FILE* log = stderr);
  ~KafkaAdmin();
  KafkaAdmin(const KafkaAdmin&) = delete;
  KafkaAdmin& operator=(const KafkaAdmin&) = delete;

  /// Creates the topics that do not exist (CreateTopics); existing ones are left as they are.
  /// Returns every topic with its partition count.
  core::Result<std::vector<TopicDescription>> EnsureTopics(const std::vector<TopicSpec>& specs);

  /// Partition count and retention.ms of an existing topic (Metadata and DescribeConfigs).
  core::Result<TopicDescription> Describe(const std::string& topic);

 private:
  struct Impl;
  explicit KafkaAdmin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace acmetrace::kafka

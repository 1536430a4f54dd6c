// Partition-aware consumption for the processors, beside KafkaSource (which reads as a plain
// consumer-group member): a reader of chosen partitions from chosen offsets, and a group member
// that only learns which partitions of an ownership topic it holds. Processors keep their input
// offsets in their own state snapshots, with the state they cover, so they read by assignment.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/kafka/kafka_source.h"

namespace acmetrace::kafka {

/// One partition of a topic and its offsets when asked. Value type.
struct PartitionInfo {
  std::string topic;
  int32_t partition = 0;
  int64_t low = 0;   // first offset still stored
  int64_t high = 0;  // the offset the next record will get (the end)
};

/// Where to start reading one partition; offset -1 = its beginning. Value type.
struct PartitionStart {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;
};

/// What Next returns: a record, or the news that a partition has no more records for now.
struct ReaderEvent {
  enum class Kind { kNone, kRecord, kPartitionEnd } kind = Kind::kNone;
  const FramedRecord* record = nullptr;  // kRecord: valid until the next Next
  std::string_view topic;                // kPartitionEnd
  int32_t partition = -1;
  int64_t offset = -1;                   // kPartitionEnd: the end offset reached
};

/// Reads assigned partitions (no consumer-group assignment, nothing committed): the caller says
/// which partitions from which offsets, and keeps the offsets it has processed itself.
/// Not thread-safe.
class KafkaPartitionReader {
 public:
  /// Connects within kafka.connect_timeout_ms.
  static core::Result<std::unique_ptr<KafkaPartitionReader>> Open(const KafkaSettings& settings,
                                                                   std::FILE* log = stderr);
  ~KafkaPartitionReader();
  KafkaPartitionReader(const KafkaPartitionReader&) = delete;
  KafkaPartitionReader& operator=(const KafkaPartitionReader&) = delete;

  /// Every partition of topics with its low and high offsets now. A missing topic is an error.
  core::Result<std::vector<PartitionInfo>> Describe(const std::vector<std::string>& topics, int timeout_ms = 10'000);
  /// Replaces the assignment: reads exactly these partitions from these offsets.
  core::Status Assign(const std::vector<PartitionStart>& starts);
  /// Stops fetching a partition (e.g. it reached the offset a bounded run stops at).
  core::Status Pause(const std::string& topic, int32_t partition);
  /// The next record or partition end within timeout_ms (kind kNone if neither came). Records come
  /// in trace-time order across partitions (each partition in its own order): of the partitions'
  /// next records, the earliest by its trace time (FramedRecord::trace_ts_ms; else its Kafka timestamp) goes first, and
  /// a partition that has records but has not delivered its next one holds the others back for at
  /// most half a second (5 s for its first record after Assign). An event-time consumer then
  /// buffers little (it buffered hours of the fastest partitions when records came as fetched).
  core::Result<ReaderEvent> Next(int timeout_ms);

 private:
  struct Impl;
  explicit KafkaPartitionReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A consumer-group member (kafka.group_id) subscribed to one topic only to be assigned some of
/// its partitions: the processors' cluster ownership. Rebalances use the eager protocol, so every
/// revocation callback has returned on every member before any member's assignment callback runs:
/// an owner can save its state in on_revoked and the next owner load it in on_assigned. The
/// callbacks run inside Poll and Close. Not thread-safe.
class KafkaGroupMembership {
 public:
  using PartitionsCallback = std::function<void(const std::vector<int32_t>& partitions)>;

  static core::Result<std::unique_ptr<KafkaGroupMembership>> Open(const KafkaSettings& settings,
                                                                  const std::string& topic,
                                                                  PartitionsCallback on_assigned,
                                                                  PartitionsCallback on_revoked,
                                                                  std::FILE* log = stderr);
  ~KafkaGroupMembership();
  KafkaGroupMembership(const KafkaGroupMembership&) = delete;
  KafkaGroupMembership& operator=(const KafkaGroupMembership&) = delete;

  /// Serves the group protocol (heartbeat answers, rebalances) for up to timeout_ms.
  core::Status Poll(int timeout_ms);
  /// True once the first assignment arrived (it may be empty).
  bool assigned_once() const;
  const std::vector<int32_t>& assignment() const;
  /// Commits offsets to the group (kafka.group_id) as this member: for each partition, of any topic,
  /// the next offset to read (PartitionStart::offset, which must be >= 0). Only a member of the
  /// group's current generation may commit while the group has members (others get
  /// UNKNOWN_MEMBER_ID), and the broker does not ask whether the member is assigned the partitions,
  /// so the ownership member can publish the progress of partitions read by assignment. Synchronous:
  /// returns once the broker has answered. Callable from the callbacks.
  core::Status Commit(const std::vector<PartitionStart>& offsets);
  /// Leaves the group (on_revoked runs for what is held). Idempotent.
  core::Status Close();

 private:
  struct Impl;
  explicit KafkaGroupMembership(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace acmetrace::kafka

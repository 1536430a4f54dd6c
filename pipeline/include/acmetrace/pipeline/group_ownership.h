// Cluster ownership through a Kafka consumer group, with state snapshots: `acmetrace process
// --source kafka` run as several instances of one group.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/kafka/kafka_partition_reader.h"
#include "acmetrace/pipeline/stages.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/state_store.h"

namespace acmetrace::pipeline {

/// Clusters owned through the consumer group's assignment of the ownership topic
/// (process.ownership_topic: cluster i of process.clusters is owned by whoever holds its partition
/// i mod N). An owned cluster resumes from its snapshot in process.state_dir, if any; the input is
/// read from the lowest offset the owned clusters' snapshots resume at. Snapshots are saved every
/// process.snapshot_interval_ms, when clusters are revoked and when the stage ends, and their
/// offsets are committed to the group (for lag tools; the snapshots stay authoritative). log gets
/// one line per event worth telling (owning a cluster, a failed commit). Not thread-safe.
class GroupOwnership : public ClusterOwnership {
 public:
  GroupOwnership(processors::ProcessOptions options, kafka::KafkaSettings settings, core::RecordSink& sink,
                 std::function<void(const std::string&)> log);
  ~GroupOwnership() override;

  core::Status Start(processors::StreamProcessor& processor, core::RecordInput& input) override;
  core::Result<bool> Poll(int64_t now_ms) override;
  core::Status Consider(std::string_view cluster) override;
  core::Status Checkpoint(int64_t now_ms, Save when) override;
  core::Status Close() override;

 private:
  int32_t OwnerPartition(std::string_view cluster) const;
  core::Status Adopt(const std::string& cluster);
  void OnAssigned(const std::vector<int32_t>& assigned);
  void OnRevoked(const std::vector<int32_t>& revoked);
  core::Status Seek();
  core::Status SaveSnapshots(bool final_flush_follows);
  void CommitSnapshotOffsets();

  processors::ProcessOptions options_;
  kafka::KafkaSettings settings_;
  core::RecordSink& sink_;
  std::function<void(const std::string&)> log_;
  processors::StreamProcessor* processor_ = nullptr;
  core::RecordInput* input_ = nullptr;
  std::unique_ptr<processors::FileStateStore> store_;
  std::unique_ptr<kafka::KafkaGroupMembership> membership_;
  int32_t ownership_partitions_ = 1;
  std::set<int32_t> held_;
  bool have_assignment_ = false;
  bool reseek_ = false;
  bool closed_ = false;
  int64_t next_poll_ms_ = 0;
  int64_t next_snapshot_ms_ = 0;
  int64_t saved_at_items_ = -1;
  core::Status callback_error_ = core::Status::Ok();
  std::string last_commit_error_;
};

}  // namespace acmetrace::pipeline

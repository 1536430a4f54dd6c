// GroupOwnership: consumer-group assignment of clusters, snapshots and group commits.
#include "acmetrace/pipeline/group_ownership.h"

#include <optional>

#include "acmetrace/pipeline/cluster_hash.h"

namespace acmetrace::pipeline {

GroupOwnership::GroupOwnership(processors::ProcessOptions options, kafka::KafkaSettings settings,
                               core::RecordSink& sink, std::function<void(const std::string&)> log)
    : options_(std::move(options)), settings_(std::move(settings)), sink_(sink), log_(std::move(log)) {}

GroupOwnership::~GroupOwnership() { (void)Close(); }

core::Status GroupOwnership::Start(processors::StreamProcessor& processor, core::RecordInput& input) {
  processor_ = &processor;
  input_ = &input;
  processor.SetSnapshotGroup(settings_.group_id);
  if (!options_.state_dir.empty()) {
    store_ = std::make_unique<processors::FileStateStore>(options_.state_dir, settings_.group_id);
    if (core::Status s = store_->Open(); !s.ok()) return s;
  } else {
    log_("no process.state_dir: a restart starts over from the beginning of the topics");
  }
  core::Result<std::unique_ptr<kafka::KafkaPartitionReader>> reader = kafka::KafkaPartitionReader::Open(settings_);
  if (!reader.ok()) return reader.status();
  core::Result<std::vector<kafka::PartitionInfo>> owners = reader.value()->Describe({options_.ownership_topic});
  if (!owners.ok()) return owners.status();
  ownership_partitions_ = static_cast<int32_t>(owners.value().size());
  core::Result<std::unique_ptr<kafka::KafkaGroupMembership>> membership = kafka::KafkaGroupMembership::Open(
      settings_, options_.ownership_topic, [this](const std::vector<int32_t>& p) { OnAssigned(p); },
      [this](const std::vector<int32_t>& p) { OnRevoked(p); });
  if (!membership.ok()) return membership.status();
  membership_ = std::move(membership).value();
  // Nothing is read before the first assignment says what is ours.
  return input.Seek(std::vector<int64_t>());
}

int32_t GroupOwnership::OwnerPartition(std::string_view cluster) const {
  for (size_t i = 0; i < options_.clusters.size(); ++i) {
    if (options_.clusters[i] == cluster) return static_cast<int32_t>(i % ownership_partitions_);
  }
  return static_cast<int32_t>(ClusterHash(cluster) % static_cast<uint32_t>(ownership_partitions_));
}

core::Status GroupOwnership::Adopt(const std::string& cluster) {
  if (store_) {
    core::Result<std::optional<std::string>> saved = store_->Load(cluster);
    if (!saved.ok()) return saved.status();
    if (saved.value()) {
      std::string warning;
      core::Status s = processor_->Restore(*saved.value(), &warning, cluster);
      if (!s.ok()) return core::Status::Error(store_->PathOf(cluster) + ": " + s.message());
      if (!warning.empty()) log_("warning: " + store_->PathOf(cluster) + ": " + warning);
      log_("owns " + cluster + " (resumed from " + store_->PathOf(cluster) + ")");
      return core::Status::Ok();
    }
  }
  processor_->Own(cluster);
  log_("owns " + cluster + " (from the beginning)");
  return core::Status::Ok();
}

void GroupOwnership::OnRevoked(const std::vector<int32_t>&) {
  have_assignment_ = false;
  if (closed_) return;
  if (core::Status s = SaveSnapshots(false); !s.ok() && callback_error_.ok()) callback_error_ = s;
}

void GroupOwnership::OnAssigned(const std::vector<int32_t>& assigned) {
  held_.clear();
  held_.insert(assigned.begin(), assigned.end());
  // Clusters no longer ours go; ours that were kept in memory stay (their snapshot, saved at the
  // revocation, is still the latest: nobody else owned them in between).
  for (const std::string& cluster : processor_->owned()) {
    if (held_.count(OwnerPartition(cluster)) > 0) continue;
    if (core::Status s = processor_->Release(cluster); !s.ok() && callback_error_.ok()) callback_error_ = s;
  }
  std::set<std::string> candidates(options_.clusters.begin(), options_.clusters.end());
  for (const std::string& cluster : candidates) {
    if (held_.count(OwnerPartition(cluster)) == 0 || processor_->Owns(cluster)) continue;
    if (core::Status s = Adopt(cluster); !s.ok() && callback_error_.ok()) callback_error_ = s;
  }
  have_assignment_ = true;
  reseek_ = true;
}

core::Status GroupOwnership::Seek() {
  reseek_ = false;
  std::vector<int64_t> starts;
  if (!processor_->owned().empty() || !held_.empty()) {
    for (size_t i = 0; i < input_->partitions().size(); ++i) {
      starts.push_back(processor_->owned().empty() ? -1 : processor_->ResumeOffset(static_cast<int>(i)));
    }
  }
  return input_->Seek(starts);
}

core::Result<bool> GroupOwnership::Poll(int64_t now_ms) {
  if (now_ms < next_poll_ms_ && have_assignment_ && !reseek_) return true;
  next_poll_ms_ = now_ms + 100;
  if (core::Status s = membership_->Poll(have_assignment_ ? 0 : 100); !s.ok()) return s;
  if (!callback_error_.ok()) return callback_error_;
  if (!have_assignment_) return false;
  if (reseek_) {
    if (core::Status s = Seek(); !s.ok()) return s;
  }
  return true;
}

core::Status GroupOwnership::Consider(std::string_view cluster) {
  if (held_.count(OwnerPartition(cluster)) == 0) return core::Status::Ok();
  return Adopt(std::string(cluster));
}

core::Status GroupOwnership::Checkpoint(int64_t now_ms, Save when) {
  if (when == Save::kIfDue) {
    if (next_snapshot_ms_ == 0) next_snapshot_ms_ = now_ms + options_.snapshot_interval_ms;
    if (now_ms < next_snapshot_ms_) return core::Status::Ok();
    next_snapshot_ms_ = now_ms + options_.snapshot_interval_ms;
    const processors::ProcessStats st = processor_->stats();
    const int64_t done = st.records + st.skipped;
    if (done == saved_at_items_) return core::Status::Ok();  // nothing new: the last snapshot still holds
    saved_at_items_ = done;
  }
  return SaveSnapshots(when == Save::kBeforeFinishing);
}

core::Status GroupOwnership::SaveSnapshots(bool final_flush_follows) {
  if (core::Status s = processor_->Drain(); !s.ok()) return s;
  if (core::Status s = sink_.Flush(); !s.ok()) return s;
  if (!store_) return core::Status::Ok();
  for (const std::string& cluster : processor_->owned()) {
    core::Result<std::string> snapshot = processor_->Snapshot(cluster, final_flush_follows);
    if (!snapshot.ok()) return snapshot.status();
    if (core::Status s = store_->Save(cluster, snapshot.value()); !s.ok()) return s;
  }
  CommitSnapshotOffsets();
  return core::Status::Ok();
}

// Publishes what the snapshots just saved cover to the consumer group, for kafka-consumer-groups.sh
// and lag exporters: per input partition, the lowest next offset over the owned clusters. A failed
// commit (e.g. during a rebalance) is told once; the next save commits again.
void GroupOwnership::CommitSnapshotOffsets() {
  if (!membership_ || processor_->owned_count() == 0) return;
  std::vector<kafka::PartitionStart> offsets;
  const std::vector<core::InputPartition>& partitions = input_->partitions();
  for (size_t i = 0; i < partitions.size(); ++i) {
    const int64_t next = processor_->ResumeOffset(static_cast<int>(i));
    if (next < 0) continue;  // an owned cluster has read nothing of it yet
    offsets.push_back(kafka::PartitionStart{partitions[i].topic, partitions[i].number, next});
  }
  const core::Status s = membership_->Commit(offsets);
  if (!s.ok() && s.message() != last_commit_error_) log_("warning: " + s.message() + " (the snapshots hold the offsets)");
  last_commit_error_ = s.ok() ? "" : s.message();
}

core::Status GroupOwnership::Close() {
  if (closed_ || !membership_) return core::Status::Ok();
  closed_ = true;  // the revocation below must not save state past the last snapshot
  return membership_->Close();
}

}  // namespace acmetrace::pipeline

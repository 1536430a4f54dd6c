// Where processor state snapshots live between runs: one file per (group, cluster).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "acmetrace/core/status.h"

namespace acmetrace::processors {

/// Snapshot files DIR/GROUP.CLUSTER.state, replaced atomically (write, fsync, rename), so a
/// reader sees the old snapshot or the new one, never half of one. Instances of one consumer group
/// share DIR. Not thread-safe (one writer per cluster at a time: the cluster's owner).
class FileStateStore {
 public:
  /// The largest snapshot Load reads: far above a cluster's state at full scale (its open windows'
  /// records and its detectors), far below what would exhaust memory.
  static constexpr size_t kMaxSnapshotBytes = size_t{1} << 30;

  FileStateStore(std::string dir, std::string group) : dir_(std::move(dir)), group_(std::move(group)) {}

  /// Creates DIR if missing.
  core::Status Open();
  /// Writes DIR/GROUP.CLUSTER.state.tmp, then renames it over the snapshot; a failed save removes
  /// the .tmp and leaves the previous snapshot as it was.
  core::Status Save(const std::string& cluster, const std::string& bytes);
  /// The cluster's last snapshot, nullopt if there is none. What is not a regular file (a FIFO, a
  /// device, a symlink to one) or is larger than kMaxSnapshotBytes is an error, found before reading.
  core::Result<std::optional<std::string>> Load(const std::string& cluster) const;
  std::string PathOf(const std::string& cluster) const;

 private:
  std::string dir_;
  std::string group_;
};

}  // namespace acmetrace::processors

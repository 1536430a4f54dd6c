// The processing engine: event-time watermark over input partitions, lateness, per-cluster
// reordering into base windows, cluster metrics and detectors, and per-cluster state snapshots.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/core/status.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/processors/cluster_metrics.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"

namespace acmetrace::processors {

/// Makes one cluster's detectors (processors::MakeDetectors in the binary, fakes in tests).
using DetectorFactory = std::function<std::vector<std::unique_ptr<Detector>>()>;

inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

/// What a processor has done so far.
struct ProcessStats {
  int64_t records = 0;         // processed records of owned clusters
  int64_t skipped = 0;         // records of clusters owned elsewhere, or already covered by a snapshot
  int64_t late = 0;            // records below the watermark (clamped to it)
  int64_t windows = 0;         // acme.metrics records written
  int64_t anomalies = 0;       // acme.anomalies records written
  int64_t suppressed = 0;      // windows an earlier run had already written (after a restore)
  int64_t untrusted = 0;       // records and markers whose time their partition's next item showed false
};

/// Told of each record or progress marker found untrusted (ProcessOptions::max_partition_lead_ms):
/// its partition, offset and why, in one line.
using UntrustedReporter = std::function<void(int partition, int64_t offset, const std::string& reason)>;

/// Turns time-ordered-ish input into acme.metrics and acme.anomalies, in event time only.
///
/// Watermark: per input partition, the highest event time read minus process.allowed_lateness_ms;
/// the watermark is the lowest of these over the partitions that are not idle (a partition at its
/// end stops holding it back). A record below its own partition's watermark, or below the
/// watermark, is late: counted, and folded into the oldest open window (its time clamped), so
/// gauges never drift and nothing is lost silently. Each cluster buffers its records by base
/// window and, when the watermark passes a window's end, applies them in a total order
/// (event time, topic, key, arrival) to its metrics and detectors, then writes the window's
/// anomalies and metrics records. Windows close in (end, cluster) order. So the output depends only
/// on the records and each key's order, not on speed, batching or how partitions interleave.
///
/// Ownership: only owned clusters are processed (all of them with SetOwnAll); the rest only move
/// the watermark. Each owned cluster keeps its own input offsets, so its state snapshot resumes
/// exactly after the records it covers.
///
/// With ProcessOptions::worker_thread, a closed window's records are applied and its output written
/// on a worker thread, in the same order as without: the output is the same, and the sink is
/// written from the worker (Flush it after Drain). Not thread-safe otherwise: one caller thread.
class StreamProcessor {
 public:
  StreamProcessor(ProcessOptions options, core::RecordSink& sink, DetectorFactory detectors);
  ~StreamProcessor();

  /// Declares an input partition by a stable name ("stdin", "acme.util/3") and returns its index.
  /// Declare every partition before the first record: the watermark waits for each.
  int DeclarePartition(const std::string& name);
  /// An idle partition (caught up, or at the end for good) stops holding the watermark back; its
  /// next record makes it active again.
  void SetPartitionIdle(int partition, bool idle);

  /// Where untrusted times are reported (input errors); none by default (counted in stats only).
  void SetUntrustedReporter(UntrustedReporter reporter) { report_untrusted_ = std::move(reporter); }

  /// Processes every cluster that appears (stdin: one instance does it all).
  void SetOwnAll(bool own_all) { own_all_ = own_all; }
  bool Owns(std::string_view cluster) const;
  /// Owns cluster from now on, with fresh state.
  void Own(const std::string& cluster);
  /// Owns the snapshot's cluster with the snapshot's state (what Snapshot wrote), detectors
  /// included. A snapshot of format version 1 (before detector state was saved) loads with fresh
  /// detectors and a message in *warning (if given). A truncated or malformed snapshot is an error
  /// and leaves the cluster not owned, and so is one that is not the expected one: of another
  /// cluster than expected_cluster (when given), of another consumer group (SetSnapshotGroup), naming
  /// a partition the input has not declared (when it has declared any), or whose checksum does not
  /// match its bytes (version 5 on; older versions have none).
  core::Status Restore(std::string_view snapshot, std::string* warning = nullptr, std::string_view expected_cluster = {});
  /// The consumer group snapshots are saved for and must have been saved for to load ("" by default).
  void SetSnapshotGroup(std::string group) { snapshot_group_ = std::move(group); }
  /// The index of a declared partition, -1 if none has that name.
  int PartitionIndex(std::string_view name) const;
  size_t partition_count() const { return partition_names_.size(); }
  /// The state of an owned cluster (metrics, buffered records, detectors) and the offsets it covers. With final_flush_follows, the
  /// snapshot also records that the windows still open are about to be written by Finish, so a
  /// later owner does not write them again.
  /// Waits for the windows already closed to be applied first: an error of theirs is the result.
  core::Result<std::string> Snapshot(const std::string& cluster, bool final_flush_follows = false) const;
  /// Stops owning cluster and drops its state, after the windows already closed are applied; their
  /// error, if any (the cluster is released all the same).
  core::Status Release(const std::string& cluster);
  std::vector<std::string> owned() const;
  size_t owned_count() const { return clusters_.size(); }
  /// Where to start reading partition: the lowest next offset over the owned clusters; -1 if some
  /// owned cluster has read nothing of it (start at the beginning).
  int64_t ResumeOffset(int partition) const;

  /// One record read from partition at offset (offset may be -1 for stdin).
  core::Status Process(int partition, int64_t offset, core::Record&& record);
  /// A record not processed here (another instance's cluster, or unparsable): only its event time
  /// (kNoTime if unknown) moves the partition's watermark and its offset counts as consumed.
  core::Status Skip(int partition, int64_t offset, int64_t ts_ms);
  /// A writer's progress marker read from partition at offset: the partition holds nothing before
  /// ts_ms any more, so its watermark moves as for a record of that time (kNoTime: only the offset
  /// counts as consumed). Not counted as a record.
  core::Status Progress(int partition, int64_t offset, int64_t ts_ms);
  /// A writer's end marker read from partition at offset, naming the clusters it wrote (comma-separated;
  /// empty: every cluster): its offset counts as consumed, and each owned cluster it names remembers,
  /// in its snapshot too, that its writer ended there, until the cluster's next record there. So an
  /// owner that resumes after the markers still knows the input ended (EndedPartitions). ts_ms: the
  /// writer's last trace time, if the marker says (it settles a pending jump of the partition, as the
  /// partition's next item does: see ProcessOptions::max_partition_lead_ms).
  core::Status EndMarker(int partition, int64_t offset, std::string_view clusters, int64_t ts_ms = kNoTime);
  /// The partitions where cluster's writer has ended since the cluster's last record there, by this
  /// owner or, through the snapshot, an earlier one.
  std::vector<int> EndedPartitions(const std::string& cluster) const;
  /// Changes to the owned clusters so far (Own, Restore, Release, and clusters of SetOwnAll): a
  /// caller compares it to tell that the owned set changed.
  uint64_t ownership_changes() const { return ownership_changes_; }
  /// Gives record the storage of a record already processed (or leaves it as it is): a parser
  /// that parses into it then allocates little.
  void ReuseRecord(core::Record& record);
  /// The end of the input: every open window closes (the watermark goes to +infinity), and is
  /// applied and written when this returns.
  core::Status Finish();
  /// Waits until every closed window has been applied and written (at once without a worker); the
  /// first error the worker met, if any.
  core::Status Drain() const;

  /// The watermark of an owned cluster (kNoTime before it is known).
  int64_t watermark_ms(const std::string& cluster) const;
  ProcessStats stats() const;

 private:
  struct Pending;
  struct ClusterState;
  struct Worker;

  ClusterState& CreateCluster(const std::string& cluster);
  // Records the partition's offset and event time; true if its highest event time rose (only then
  // can the watermark move: a partition turning active again never raises it).
  bool Observe(ClusterState& c, int partition, int64_t offset, int64_t ts_ms);
  // Settles the partition's pending claim (a time beyond max_partition_lead_ms) with the item that
  // follows it, then judges ts_ms: true if it may move the partition's time now, false if it is
  // the partition's new pending claim.
  bool Trust(int partition, int64_t offset, int64_t ts_ms);
  int64_t ComputeWatermark(const ClusterState& c) const;
  core::Status CloseReadyWindows(bool finishing);
  core::Status CloseWindow(ClusterState& c, int64_t start_ms);
  // What the worker (or the caller, without one) does next for a cluster: a closed window's
  // records, a tick of the detectors through windows without records (time moving on), or the end.
  enum class TimeStep { kWindow, kTick, kFinish };
  core::Status Schedule(ClusterState& c, int64_t start_ms, std::vector<Pending>& records, TimeStep step);
  core::Status ApplyJob(ClusterState& c, int64_t start_ms, std::vector<Pending>& records, TimeStep step);
  core::Status WriteAnomalies();
  // Applies one closed window's records and writes its anomalies and metrics (on the worker, if any).
  core::Status ApplyWindow(ClusterState& c, int64_t start_ms, std::vector<Pending>& records);
  using SpareRecords = std::array<std::vector<core::Record>, std::variant_size_v<core::Record>>;
  // Keeps an applied window's records in spare, by kind (ReuseRecord: their vectors keep their
  // capacity), and its emptied vector in empty_windows, for a later window; each up to its bound.
  static void Recycle(std::vector<Pending>& records, SpareRecords& spare,
                      std::vector<std::vector<Pending>>& empty_windows);
  void TakeEmptyWindow(std::vector<Pending>& window);

  ProcessOptions options_;
  core::RecordSink& sink_;
  DetectorFactory make_detectors_;
  bool own_all_ = false;
  uint64_t ownership_changes_ = 0;
  std::vector<std::string> partition_names_;
  std::string snapshot_group_;
  std::vector<bool> partition_idle_;
  // Per partition: the highest event time trusted, and the pending claim beyond the lead bound.
  struct PartitionTrust {
    int64_t trusted_ts = kNoTime;
    int64_t claim_ts = kNoTime;
    int64_t claim_offset = -1;
    ClusterState* claim_cluster = nullptr;  // the claim's record, if it was one of an owned cluster
    int64_t claim_window = 0;
    uint64_t claim_seq = 0;
  };
  std::vector<PartitionTrust> trust_;
  UntrustedReporter report_untrusted_;
  std::map<std::string, std::unique_ptr<ClusterState>, std::less<>> clusters_;
  ProcessStats stats_;  // but for the three written on the worker:
  std::atomic<int64_t> windows_written_{0};
  std::atomic<int64_t> anomalies_written_{0};
  std::atomic<int64_t> suppressed_{0};
  std::vector<core::AnomalyEvent> anomalies_;       // scratch
  std::vector<core::MetricsWindow> windows_;        // scratch
  // Storage of processed records for ReuseRecord, per record kind (the variant's index), enough
  // for every record of a base window at full scale: a parser then allocates almost nothing.
  static constexpr size_t kMaxSpareRecords = 4096;
  SpareRecords spare_;
  size_t last_kind_ = 0;  // the kind of the record processed last: the likely kind of the next
  struct OrderKey;
  std::vector<OrderKey> order_;  // scratch: a window's records in processing order
  static constexpr size_t kMaxEmptyWindows = 64;
  std::vector<std::vector<Pending>> empty_windows_;  // applied windows' vectors, capacity kept
  std::unique_ptr<Worker> worker_;  // last: it stops before the state it works on goes
};

}  // namespace acmetrace::processors

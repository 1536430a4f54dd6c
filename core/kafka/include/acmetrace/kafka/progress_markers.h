// Which partitions of a writer's stream get a progress marker, and when (docs/kafka.md "Stream markers").
#pragma once

#include <cstdint>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/kafka/kafka_message.h"

namespace acmetrace::kafka {

/// The progress-marker schedule of a writer whose records come in trace-time order. A round is due
/// each time the records' trace time has moved on by the interval; in a round, a marker goes into
/// every partition that no record from this writer went into since the previous round. A partition
/// that did get one needs none: readers take a record's trace_ts_ms as its partition's progress
/// just as a marker's, and the writer's records after it are no earlier. Records whose partition is
/// not known (kUnknownPartition: left to librdkafka's partitioner) count for no partition. Not
/// thread-safe.
class ProgressMarkers {
 public:
  static constexpr int32_t kUnknownPartition = -1;

  /// progress_every_ms <= 0: never due. Topics are numbered in the order of partition_counts.
  ProgressMarkers(std::vector<int32_t> partition_counts, int64_t progress_every_ms);

  /// Whether a round of markers is due before a record at trace time trace_ts_ms; the first record
  /// starts the schedule without one (nothing was written before it). When due, the next round is
  /// due progress_every_ms after trace_ts_ms.
  bool DueBefore(int64_t trace_ts_ms);
  /// A record went into this partition of topic (its index in partition_counts).
  void Wrote(size_t topic, int32_t partition) {
    if (partition >= 0 && topic < written_.size() && static_cast<size_t>(partition) < written_[topic].size()) {
      written_[topic][static_cast<size_t>(partition)] = true;
    }
  }
  /// Calls send(topic, partition) for every partition that gets a marker in this round, in topic
  /// then partition order, and starts the next round; stops at the first failure and returns it.
  template <typename Send>
  core::Status Round(Send&& send) {
    for (size_t t = 0; t < written_.size(); ++t) {
      for (size_t p = 0; p < written_[t].size(); ++p) {
        if (written_[t][p]) {
          written_[t][p] = false;
          continue;
        }
        if (core::Status s = send(t, static_cast<int32_t>(p)); !s.ok()) return s;
      }
    }
    return core::Status::Ok();
  }

 private:
  std::vector<std::vector<bool>> written_;  // per topic, per partition: a record since the last round
  int64_t every_ms_;
  int64_t next_ms_ = kNoTraceTs;  // the trace time at which the next round is due
};

}  // namespace acmetrace::kafka

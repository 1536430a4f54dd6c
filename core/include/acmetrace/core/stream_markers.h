// Stream markers, the same on every transport: what a writer tells the readers of its stream
// besides records (docs/design.md "Stream markers"). A progress marker at trace time T: the writer
// writes nothing before T into this partition any more; an end marker: its stream ended, naming
// the clusters it wrote. Transports only frame them (Kafka in message headers, the file transport
// in a line of their own); their text, their trust and the progress schedule are here.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// A trace time not known (no trace_ts_ms given).
inline constexpr int64_t kNoTraceTs = std::numeric_limits<int64_t>::min();

/// A marker's text. "progress": nothing with a trace time below the marker's comes into this
/// partition any more from this writer (its records come in trace-time order); "progress:paused":
/// the same from a paused writer (alive, not ended); "end:CLUSTERS": the writer's stream ended, and
/// it wrote these clusters (comma-separated; none: every cluster).
inline constexpr std::string_view kProgressMarker = "progress";
inline constexpr std::string_view kPausedProgressMarker = "progress:paused";
inline constexpr std::string_view kEndMarkerPrefix = "end:";

/// "end:" and the clusters, comma-separated.
std::string EndMarkerText(const std::vector<std::string>& clusters);

/// What a marker's text and trace time make it. Readers trust a marker as far as a record: its
/// time must be one a record may have (IsTraceTimeMs), and what it claims beyond that is the
/// processors' to bound. Value type; clusters points into the marker text.
struct StreamMarker {
  enum class Kind {
    kRecord,       // not a marker
    kProgress,     // a progress marker at trace_ts_ms
    kEnd,          // an end marker naming clusters ("" = every cluster)
    kOtherMarker,  // a marker of a later version: skipped
    kInvalid,      // a marker no writer of ours writes: an input error (error says why)
  };
  Kind kind = Kind::kRecord;
  int64_t trace_ts_ms = kNoTraceTs;  // kNoTraceTs: no trace time given
  std::string_view clusters;
  bool paused = false;  // kProgress: a paused writer's heartbeat (kPausedProgressMarker)
  std::string error;
};

/// Reads a marker (marker: its text, empty when the item is a record) and the trace time that
/// comes with it (trace_ts: decimal unix ms, empty when absent). A trace time that is not a whole
/// integer in the trace years, a progress marker without one, and an end marker naming a cluster
/// longer than kMaxNameBytes are kInvalid.
StreamMarker ReadStreamMarker(std::string_view marker, std::string_view trace_ts);

/// A marker as a line of its own, for transports that carry no headers (the file transport):
/// {"marker":TEXT,"trace_ts_ms":T}\n, T left out when trace_ts_ms is kNoTraceTs.
void AppendMarkerLine(std::string& out, std::string_view marker, int64_t trace_ts_ms);
/// Whether line is a marker line (a JSON object of "marker", a string, and optionally
/// "trace_ts_ms"); if so, its text and the trace time's digits (empty when absent), for
/// ReadStreamMarker. Anything else (a record, broken JSON) is not one.
bool ReadMarkerLine(std::string_view line, std::string& text, std::string& trace_ts);

/// The progress-marker schedule of a writer whose records come in trace-time order. A round is due
/// each time the records' trace time has moved on by the interval; in a round at trace time T, a
/// marker at T goes into every partition whose last record from this writer is older than T minus the
/// interval. The others need none: readers take a record's trace_ts_ms as its partition's progress
/// just as a marker's, so after a round every partition has said it is at T minus the interval or
/// later, as a marker of the previous round would have. Records whose partition is not known
/// (kUnknownPartition: left to a client's partitioner) count for no partition. Not thread-safe.
class ProgressMarkers {
 public:
  static constexpr int32_t kUnknownPartition = -1;

  /// progress_every_ms <= 0: never due. Topics are numbered in the order of partition_counts.
  ProgressMarkers(std::vector<int32_t> partition_counts, int64_t progress_every_ms);

  /// Whether a round of markers is due before a record at trace time trace_ts_ms; the first record
  /// starts the schedule without one (nothing was written before it). When due, the next round is
  /// due progress_every_ms after trace_ts_ms.
  bool DueBefore(int64_t trace_ts_ms);
  /// A record at trace time trace_ts_ms went into this partition of topic (its index in partition_counts).
  void Wrote(size_t topic, int32_t partition, int64_t trace_ts_ms) {
    if (partition >= 0 && topic < last_ms_.size() && static_cast<size_t>(partition) < last_ms_[topic].size()) {
      int64_t& last = last_ms_[topic][static_cast<size_t>(partition)];
      if (trace_ts_ms > last) last = trace_ts_ms;
    }
  }
  /// Whether rounds are ever due (progress_every_ms > 0).
  bool enabled() const { return every_ms_ > 0; }
  int64_t every_ms() const { return every_ms_; }
  /// Calls send(topic, partition) for every partition that gets a marker in the round DueBefore
  /// has just found due (before the first record: every partition), in topic then partition order;
  /// stops at the first failure and returns it.
  template <typename Send>
  Status Round(Send&& send) {
    for (size_t t = 0; t < last_ms_.size(); ++t) {
      for (size_t p = 0; p < last_ms_[t].size(); ++p) {
        // A record since one interval before the round says as much as the marker would.
        const int64_t last = last_ms_[t][p];
        if (round_ms_ != kNoTraceTs && last != kNoTraceTs && last >= round_ms_ - every_ms_) continue;
        if (Status s = send(t, static_cast<int32_t>(p)); !s.ok()) return s;
      }
    }
    return Status::Ok();
  }

 private:
  std::vector<std::vector<int64_t>> last_ms_;  // per topic, per partition: its last record's trace time
  int64_t every_ms_;
  int64_t next_ms_ = kNoTraceTs;   // the trace time at which the next round is due
  int64_t round_ms_ = kNoTraceTs;  // the trace time of the round found due last
};

}  // namespace acmetrace::core

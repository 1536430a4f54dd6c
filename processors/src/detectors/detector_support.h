// Pieces every detector uses: the open/close state machine with hysteresis, the outbox that hands
// transitions out in (ts_ms, subject) order as the watermark passes them, and lookups into records.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/record.h"

namespace acmetrace::processors::detectors {

inline constexpr int64_t kNoTimeMs = std::numeric_limits<int64_t>::min();

/// Open/closed state of one subject. Opens once the open condition has held for open_for_ms, closes
/// once the close condition has held for close_for_ms; the gap between the two conditions is the
/// hysteresis that keeps a value hovering at a threshold from flapping. Value type.
class HysteresisState {
 public:
  enum class Change { kNone, kOpened, kClosed };

  /// One observation at ts_ms (non-decreasing). While closed only open_condition matters, while open
  /// only close_condition.
  Change Update(int64_t ts_ms, bool open_condition, bool close_condition, int64_t open_for_ms, int64_t close_for_ms) {
    const bool pending = open_ ? close_condition : open_condition;
    if (!pending) {
      since_ms_ = kNoTimeMs;
      return Change::kNone;
    }
    if (since_ms_ == kNoTimeMs) since_ms_ = ts_ms;
    if (ts_ms - since_ms_ < (open_ ? close_for_ms : open_for_ms)) return Change::kNone;
    open_ = !open_;
    since_ms_ = kNoTimeMs;
    return open_ ? Change::kOpened : Change::kClosed;
  }

  bool open() const { return open_; }
  /// True while the condition that would change the state holds but has not held long enough.
  bool pending() const { return since_ms_ != kNoTimeMs; }

 private:
  bool open_ = false;
  int64_t since_ms_ = kNoTimeMs;
};

/// Transitions waiting for the watermark. Not thread-safe.
class AnomalyOutbox {
 public:
  void Add(std::string_view cluster, std::string_view kind, std::string subject, bool open, int64_t ts_ms,
           double value, double threshold) {
    core::AnomalyEvent e;
    e.cluster = std::string(cluster);
    e.kind = std::string(kind);
    e.subject = std::move(subject);
    e.open = open;
    e.ts_ms = ts_ms;
    e.value = value;
    e.threshold = threshold;
    pending_.push_back(std::move(e));
  }

  /// Appends the transitions with ts_ms <= watermark_ms in (ts_ms, cluster, subject) order; a subject's
  /// own transitions keep the order they were made in.
  void FlushTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) {
    if (pending_.empty()) return;
    std::stable_sort(pending_.begin(), pending_.end(), [](const core::AnomalyEvent& a, const core::AnomalyEvent& b) {
      if (a.ts_ms != b.ts_ms) return a.ts_ms < b.ts_ms;
      if (a.cluster != b.cluster) return a.cluster < b.cluster;
      return a.subject < b.subject;
    });
    size_t n = 0;
    while (n < pending_.size() && pending_[n].ts_ms <= watermark_ms) ++n;
    for (size_t i = 0; i < n; ++i) out.push_back(std::move(pending_[i]));
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
  }

 private:
  std::vector<core::AnomalyEvent> pending_;
};

/// A cluster's telemetry sample times: says when one is complete, i.e. every record of it has been
/// seen (a later sample time arrived, or the watermark reached it). Value type.
class SampleTimeCursor {
 public:
  /// Before applying a record at ts_ms: the sample time it completes, or kNoTimeMs.
  int64_t OnRecord(int64_t ts_ms) {
    int64_t complete = kNoTimeMs;
    if (current_ms_ != kNoTimeMs && ts_ms > current_ms_ && done_ms_ < current_ms_) complete = done_ms_ = current_ms_;
    current_ms_ = std::max(current_ms_, ts_ms);
    return complete;
  }
  /// The sample time the watermark completes, or kNoTimeMs.
  int64_t OnWatermark(int64_t watermark_ms) {
    if (current_ms_ == kNoTimeMs || watermark_ms < current_ms_ || done_ms_ >= current_ms_) return kNoTimeMs;
    return done_ms_ = current_ms_;
  }

 private:
  int64_t current_ms_ = kNoTimeMs;
  int64_t done_ms_ = kNoTimeMs;
};

/// The values of GPU metric name in sample, or nullptr.
inline const std::vector<double>* FindGpuMetric(const core::UtilSample& sample, std::string_view name) {
  for (const core::GpuMetric& m : sample.gpu) {
    if (m.name == name) return &m.values;
  }
  return nullptr;
}

/// "10.140.1.10-3": the node and the GPU index, as the release names GPU columns.
inline std::string GpuSubject(std::string_view node, size_t gpu) {
  std::string s(node);
  s += '-';
  s += std::to_string(gpu);
  return s;
}

/// True if state is one of states (a kind's configured list of final job states).
inline bool StateListed(const std::vector<std::string>& states, std::string_view state) {
  return std::find(states.begin(), states.end(), state) != states.end();
}

}  // namespace acmetrace::processors::detectors

// Pieces every detector uses: the open/close state machine with hysteresis, the outbox that hands
// transitions out in (ts_ms, subject) order as the watermark passes them, and lookups into records.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/processors/state_codec.h"

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

  static constexpr size_t kSavedBytes = 16;
  void Save(StateWriter& out) const {
    out.U64(open_ ? 1 : 0);
    out.I64(since_ms_);
  }
  void Load(StateReader& in) {
    const uint64_t open = in.U64();
    if (open > 1) in.Fail();
    open_ = open == 1;
    since_ms_ = in.I64();
  }

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

  /// Saves cluster's transitions not yet flushed, in the order they were made.
  void Save(std::string_view cluster, StateWriter& out) const {
    uint64_t n = 0;
    for (const core::AnomalyEvent& e : pending_) n += e.cluster == cluster;
    out.U64(n);
    for (const core::AnomalyEvent& e : pending_) {
      if (e.cluster != cluster) continue;
      out.Str(e.subject);
      out.U64(e.open ? 1 : 0);
      out.I64(e.ts_ms);
      out.F64(e.value);
      out.F64(e.threshold);
    }
  }
  /// Replaces cluster's transitions with saved ones (of kind).
  void Load(std::string_view cluster, std::string_view kind, StateReader& in) {
    std::erase_if(pending_, [&](const core::AnomalyEvent& e) { return e.cluster == cluster; });
    const uint64_t n = in.Count(40);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      std::string subject = in.Str();
      const uint64_t open = in.U64();
      const int64_t ts_ms = in.I64();
      const double value = in.F64();
      const double threshold = in.F64();
      if (open > 1) in.Fail();
      if (!in.ok()) return;
      Add(cluster, kind, std::move(subject), open == 1, ts_ms, value, threshold);
    }
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

  void Save(StateWriter& out) const {
    out.I64(current_ms_);
    out.I64(done_ms_);
  }
  void Load(StateReader& in) {
    current_ms_ = in.I64();
    done_ms_ = in.I64();
  }

 private:
  int64_t current_ms_ = kNoTimeMs;
  int64_t done_ms_ = kNoTimeMs;
};

/// Saves the entries of a map keyed "cluster/node" that belong to cluster: the count, then each
/// node name and save_value(value, out).
template <typename V, typename SaveValue>
void SaveNodeEntries(const std::map<std::string, V>& nodes, std::string_view cluster, StateWriter& out,
                     SaveValue save_value) {
  std::string prefix(cluster);
  prefix += '/';
  const auto first = nodes.lower_bound(prefix);
  auto last = first;
  uint64_t n = 0;
  while (last != nodes.end() && last->first.starts_with(prefix)) ++last, ++n;
  out.U64(n);
  for (auto it = first; it != last; ++it) {
    out.Str(std::string_view(it->first).substr(prefix.size()));
    save_value(it->second, out);
  }
}

/// Replaces cluster's entries of a map keyed "cluster/node" with what SaveNodeEntries wrote;
/// load_value(in) -> V reads one value.
template <typename V, typename LoadValue>
void LoadNodeEntries(std::map<std::string, V>& nodes, std::string_view cluster, StateReader& in,
                     LoadValue load_value) {
  std::string prefix(cluster);
  prefix += '/';
  auto it = nodes.lower_bound(prefix);
  while (it != nodes.end() && it->first.starts_with(prefix)) it = nodes.erase(it);
  const uint64_t n = in.Count(9);
  for (uint64_t i = 0; i < n && in.ok(); ++i) {
    std::string node = in.Str();
    V value = load_value(in);
    if (!in.ok()) return;
    nodes.insert_or_assign(prefix + node, std::move(value));
  }
}

/// Saves a per-GPU vector of hysteresis states.
inline void SaveGpuStates(const std::vector<HysteresisState>& gpus, StateWriter& out) {
  out.U64(gpus.size());
  for (const HysteresisState& g : gpus) g.Save(out);
}
inline std::vector<HysteresisState> LoadGpuStates(StateReader& in) {
  std::vector<HysteresisState> gpus(in.Count(HysteresisState::kSavedBytes));
  for (HysteresisState& g : gpus) g.Load(in);
  return gpus;
}

/// Saves the entry of a map keyed by cluster (present or not), then save_value(value, out).
template <typename V, typename SaveValue>
void SaveClusterEntry(const std::map<std::string, V, std::less<>>& clusters, std::string_view cluster,
                      StateWriter& out, SaveValue save_value) {
  const auto it = clusters.find(cluster);
  out.U64(it == clusters.end() ? 0 : 1);
  if (it != clusters.end()) save_value(it->second, out);
}

/// Replaces cluster's entry with what SaveClusterEntry wrote; load_value(in, value) fills a fresh one.
template <typename V, typename LoadValue>
void LoadClusterEntry(std::map<std::string, V, std::less<>>& clusters, std::string_view cluster, StateReader& in,
                      LoadValue load_value) {
  if (const auto it = clusters.find(cluster); it != clusters.end()) clusters.erase(it);
  const uint64_t present = in.U64();
  if (present > 1) in.Fail();
  if (present != 1 || !in.ok()) return;
  V value{};
  load_value(in, value);
  if (in.ok()) clusters.insert_or_assign(std::string(cluster), std::move(value));
}

/// nodes["cluster/node"], made on first use; key is the caller's scratch string, so a record costs
/// a lookup and no allocation.
template <typename V>
V& NodeEntry(std::map<std::string, V>& nodes, std::string& key, std::string_view cluster, std::string_view node) {
  key.assign(cluster).append(1, '/').append(node);
  auto it = nodes.find(key);
  if (it == nodes.end()) it = nodes.emplace(key, V()).first;
  return it->second;
}

/// A GPU metric's name, interned once, so FindGpuMetric finds it by address (GpuMetric names are
/// interned): no string compares per record.
struct GpuMetricName {
  explicit GpuMetricName(std::string_view name) : interned(core::InternName(name)) {}
  std::string_view interned;
};

/// The values of GPU metric name in sample, or nullptr.
inline const std::vector<double>* FindGpuMetric(const core::UtilSample& sample, const GpuMetricName& name) {
  for (const core::GpuMetric& m : sample.gpu) {
    if (m.name.data() == name.interned.data()) return &m.values;
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

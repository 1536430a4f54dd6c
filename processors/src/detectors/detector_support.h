// Pieces every detector uses: the open/close state machine with hysteresis, the outbox that hands
// transitions out in (ts_ms, subject) order as the watermark passes them, and lookups into records.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/core/time.h"
#include "acmetrace/processors/detector.h"
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

  /// Time in which the condition could not be judged (ts_ms moved on by ms without an Update): a change
  /// pending waits, its start moving on by ms, so that time neither counts toward it nor restarts it.
  void Wait(int64_t ms) {
    if (since_ms_ != kNoTimeMs) since_ms_ += ms;
  }

  bool open() const { return open_; }
  /// True while the condition that would change the state holds but has not held long enough.
  bool pending() const { return since_ms_ != kNoTimeMs; }

  /// The state's fields, for the snapshot codec (state_codec.h).
  template <class Io, class Self>
  static void Fields(Io& io, Self& s) {
    io(s.open_, s.since_ms_);
  }

 private:
  bool open_ = false;
  int64_t since_ms_ = kNoTimeMs;
};

/// The judgement times of a detector that judges a cluster every step_ms of event time, from the first
/// step boundary after the cluster's first record. Value type.
class StepClock {
 public:
  /// A record at ts_ms: the first one starts the clock.
  void OnRecord(int64_t ts_ms, int64_t step_ms) {
    if (next_ms_ == kNoTimeMs) next_ms_ = first_ms_ = (ts_ms / step_ms + 1) * step_ms;
  }
  /// Calls judge(t) for each step time t <= watermark_ms not judged yet, in order. Before each,
  /// skip(t) may say that the steps from t on change nothing for a while: it returns how far to jump
  /// (a multiple of step_ms; 0 = judge t).
  template <class Skip, class Judge>
  void RunTo(int64_t watermark_ms, int64_t step_ms, Skip skip, Judge judge) {
    while (next_ms_ != kNoTimeMs && next_ms_ <= watermark_ms) {
      if (const int64_t jump = skip(next_ms_); jump > 0) {
        next_ms_ += jump;
        continue;
      }
      judge(next_ms_);
      next_ms_ += step_ms;
    }
  }
  /// The first step time (kNoTimeMs before the first record).
  int64_t first_ms() const { return first_ms_; }
  /// Whether a record has started the clock.
  bool started() const { return first_ms_ != kNoTimeMs; }

  template <class Io, class Self>
  static void Fields(Io& io, Self& s) {
    io(s.next_ms_, s.first_ms_);
    // Read back, both are unset or trace times: a clock decades before the data would be walked a
    // step at a time (RunTo) for as long.
    if constexpr (Io::kReading) {
      for (const int64_t t : {s.next_ms_, s.first_ms_}) {
        if (t != kNoTimeMs && !core::IsTraceTimeMs(t)) io.Fail("a detector's step clock is not a trace time");
      }
    }
  }

 private:
  int64_t next_ms_ = kNoTimeMs;
  int64_t first_ms_ = kNoTimeMs;
};

/// Starts the step clock of a job-driven detector's cluster (clusters: name -> state with a StepClock
/// `steps`) at its first telemetry sample, for a record that is one. With the first job end (the
/// detector's own call), that is where its history starts: a trace cut from a longer one holds, before
/// either, only the jobs still pending or running when it begins (issue #22).
template <class Clusters>
void StartClockOnTelemetry(Clusters& clusters, const core::Record& record, int64_t step_ms) {
  const auto* sample = std::get_if<core::UtilSample>(&record);
  if (sample == nullptr) return;
  const auto it = clusters.find(sample->cluster);
  if (it == clusters.end() || !it->second.steps.started()) clusters[sample->cluster].steps.OnRecord(sample->ts_ms, step_ms);
}

/// For a detector that judges each cluster at its telemetry sample times (Cluster::times, a
/// SampleTimeCursor): (self->*judge)(name, cluster, t) for each time the watermark completes.
template <class Clusters, class Self, class Judge>
void JudgeCompletedSampleTimes(Clusters& clusters, int64_t watermark_ms, Self* self, Judge judge) {
  for (auto& [name, c] : clusters) {
    if (const int64_t done = c.times.OnWatermark(watermark_ms); done != kNoTimeMs) (self->*judge)(name, c, done);
  }
}

/// The same on a util sample: its cluster's entry, after judging the sample time it completes, if any.
template <class Clusters, class Self, class Judge>
auto& JudgeCompletedSampleTime(Clusters& clusters, const core::UtilSample& sample, Self* self, Judge judge) {
  auto& c = clusters[sample.cluster];
  if (const int64_t done = c.times.OnRecord(sample.ts_ms); done != kNoTimeMs) (self->*judge)(sample.cluster, c, done);
  return c;
}

/// The job event a job-judging detector observes; any other record starts its cluster's clock
/// (StartClockOnTelemetry) and gives nullptr.
template <class Clusters>
const core::JobEvent* JobOrStartClock(Clusters& clusters, const core::Record& record, int64_t step_ms) {
  const auto* job = std::get_if<core::JobEvent>(&record);
  if (job == nullptr) StartClockOnTelemetry(clusters, record, step_ms);
  return job;
}

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

  /// cluster's transitions not yet flushed, as one field of a detector's state: saved in the order they
  /// were made; loading replaces cluster's (of kind) and keeps the other clusters'.
  auto Slice(std::string_view cluster, std::string_view kind) const { return SliceRef<const AnomalyOutbox>{*this, cluster, kind}; }
  auto Slice(std::string_view cluster, std::string_view kind) { return SliceRef<AnomalyOutbox>{*this, cluster, kind}; }

 private:
  // What a snapshot holds of a transition (the cluster and kind are the slice's).
  struct Saved {
    template <class Io, class E>
    static void Fields(Io& io, E& e) {
      io(e.subject, e.open, e.ts_ms, e.value, e.threshold);
    }
  };
  template <class Outbox>
  struct SliceRef {
    Outbox& outbox;
    std::string_view cluster, kind;
    void Write(StateWriter& out) const {
      uint64_t n = 0;
      for (const core::AnomalyEvent& e : outbox.pending_) n += e.cluster == cluster;
      out.U64(n);
      for (const core::AnomalyEvent& e : outbox.pending_) {
        if (e.cluster == cluster) Saved::Fields(out, e);
      }
    }
    void Read(StateReader& in) {
      std::erase_if(outbox.pending_, [&](const core::AnomalyEvent& e) { return e.cluster == cluster; });
      state_codec_internal::MinBytesCounter item(in.version());
      const core::AnomalyEvent blank;
      Saved::Fields(item, blank);
      const uint64_t n = in.Count(item.bytes());
      for (uint64_t i = 0; i < n && in.ok(); ++i) {
        core::AnomalyEvent e;
        Saved::Fields(in, e);
        if (!in.ok()) return;
        e.cluster = std::string(cluster);
        e.kind = std::string(kind);
        outbox.pending_.push_back(std::move(e));
      }
    }
  };

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

  // Fields: the member list state_codec.h reads and writes, the same few lines in every state type by design.
  template <class Io, class Self>
  static void Fields(Io& io, Self& s) {
    io(s.current_ms_, s.done_ms_);
  }

 private:
  int64_t current_ms_ = kNoTimeMs;
  int64_t done_ms_ = kNoTimeMs;
};

namespace internal {
// Bumped whenever a snapshot load erases entries of a node-keyed map: every NodeCursor's hint is then
// dropped (it may point at an erased entry). Any thread's load drops all hints: cheap and safe.
inline std::atomic<uint64_t> node_map_erasures{0};
}  // namespace internal
inline void NodeMapEntriesErased() { internal::node_map_erasures.fetch_add(1, std::memory_order_relaxed); }

/// A lookup cursor for a map keyed by node name (or "cluster/node"), kept next to the map. The replay
/// writes a sample time's nodes in name order, one record each, so the entry after the one found last
/// is the next record's nearly always: one string compare finds it instead of a walk down the tree
/// (~7 compares of keys that share their first 10-15 bytes at 86 nodes). Same entries, same output.
/// A copy starts without a hint, as does every cursor after a snapshot load erased map entries. Use it
/// only with maps whose entries are erased by NodeEntriesRef::Read alone (or that are replaced whole).
/// Not thread-safe (as the map).
template <class Map>
class NodeCursor {
 public:
  NodeCursor() = default;
  NodeCursor(const NodeCursor&) {}
  NodeCursor& operator=(const NodeCursor&) {
    valid_ = false;
    return *this;
  }

  /// map[key], made on first use.
  template <class Key>
  typename Map::mapped_type& Find(Map& map, const Key& key) {
    const uint64_t erasures = internal::node_map_erasures.load(std::memory_order_relaxed);
    typename Map::iterator it;
    if (valid_ && erasures_ == erasures && next_ != map.end() && next_->first == key) {
      it = next_;
    } else {
      it = map.find(key);
      if (it == map.end()) it = map.emplace(key, typename Map::mapped_type()).first;
    }
    next_ = std::next(it);
    erasures_ = erasures;
    valid_ = true;
    return it->second;
  }

 private:
  typename Map::iterator next_{};
  uint64_t erasures_ = 0;
  bool valid_ = false;
};

/// NodeEntry's scratch: the key of the record at hand, and the lookup cursor.
template <typename V>
struct NodeKey {
  std::string key;
  NodeCursor<std::map<std::string, V>> cursor;
};

/// The entries of a map keyed "cluster/node" that belong to cluster, as one field of a detector's
/// state: the count, then each node name (without the cluster) and value. Loading replaces cluster's
/// entries and keeps the other clusters'. Made by NodeEntriesOf.
template <class Map>
class NodeEntriesRef {
 public:
  NodeEntriesRef(Map& nodes, std::string_view cluster) : nodes_(nodes), prefix_(std::string(cluster) + '/') {}
  void Write(StateWriter& out) const {
    const auto first = nodes_.lower_bound(prefix_);
    auto last = first;
    uint64_t n = 0;
    while (last != nodes_.end() && last->first.starts_with(prefix_)) ++last, ++n;
    out.U64(n);
    for (auto it = first; it != last; ++it) {
      out.Str(std::string_view(it->first).substr(prefix_.size()));
      out(it->second);
    }
  }
  void Read(StateReader& in) {
    using Value = typename std::remove_const_t<Map>::mapped_type;
    NodeMapEntriesErased();
    auto it = nodes_.lower_bound(prefix_);
    while (it != nodes_.end() && it->first.starts_with(prefix_)) it = nodes_.erase(it);
    const uint64_t n = in.Count(8 + state_codec_internal::MinBytes<Value>(in.version()));
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      std::string node;
      Value value{};
      in(node, value);
      if (!in.ok()) return;
      nodes_.insert_or_assign(prefix_ + node, std::move(value));
    }
  }

 private:
  Map& nodes_;
  std::string prefix_;
};
template <class Map>
NodeEntriesRef<Map> NodeEntriesOf(Map& nodes, std::string_view cluster) {
  return NodeEntriesRef<Map>(nodes, cluster);
}

/// The entry of a map keyed by cluster, as one field of a detector's state: present (0 or 1), then
/// the value. Loading replaces cluster's entry and keeps the other clusters'. Made by ClusterEntryOf.
template <class Map>
class ClusterEntryRef {
 public:
  ClusterEntryRef(Map& clusters, std::string_view cluster) : clusters_(clusters), cluster_(cluster) {}
  void Write(StateWriter& out) const {
    const auto it = clusters_.find(cluster_);
    out(it != clusters_.end());
    if (it != clusters_.end()) out(it->second);
  }
  void Read(StateReader& in) {
    if (const auto it = clusters_.find(cluster_); it != clusters_.end()) clusters_.erase(it);
    bool present = false;
    in(present);
    if (!present || !in.ok()) return;
    typename std::remove_const_t<Map>::mapped_type value{};
    in(value);
    if (in.ok()) clusters_.insert_or_assign(std::string(cluster_), std::move(value));
  }

 private:
  Map& clusters_;
  std::string_view cluster_;
};
template <class Map>
ClusterEntryRef<Map> ClusterEntryOf(Map& clusters, std::string_view cluster) {
  return ClusterEntryRef<Map>(clusters, cluster);
}

/// A detector whose per-cluster state Derived describes once, in
///   template <class Io, class Self> static void StateFields(Io& io, Self& d, std::string_view cluster)
/// (Self is const on saving), and whose layout is Derived::kStateVersion (bump it when the fields
/// change, and branch on io.version() in StateFields to keep reading the older layouts).
template <class Derived>
class DetectorWithState : public Detector {
 public:
  uint32_t state_version() const final { return Derived::kStateVersion; }
  void SaveState(std::string_view cluster, StateWriter& out) const final {
    Derived::StateFields(out, static_cast<const Derived&>(*this), cluster);
  }
  void LoadState(std::string_view cluster, StateReader& in) final {
    Derived::StateFields(in, static_cast<Derived&>(*this), cluster);
  }
};

/// A detector whose state is one Cluster value per cluster (described by Cluster::Fields) and the
/// transitions not yet handed out; Derived gives kStateVersion (of Cluster's layout). Not thread-safe.
template <class Derived, class Cluster>
class PerClusterDetector : public DetectorWithState<Derived> {
 public:
  template <class Io, class Self>
  static void StateFields(Io& io, Self& d, std::string_view cluster) {
    io(ClusterEntryOf(d.clusters_, cluster), d.outbox_.Slice(cluster, d.kind()));
  }

 protected:
  std::map<std::string, Cluster, std::less<>> clusters_;
  AnomalyOutbox outbox_;
};

/// A detector whose state is one value per node (Derived::nodes_, "cluster/node" -> value; Derived
/// befriends this class) and the transitions not yet handed out, which the watermark releases;
/// Derived gives kStateVersion (of its node value's layout). Not thread-safe.
template <class Derived>
class PerNodeDetector : public DetectorWithState<Derived> {
 public:
  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) final { outbox_.FlushTo(watermark_ms, out); }
  template <class Io, class Self>
  static void StateFields(Io& io, Self& d, std::string_view cluster) {
    io(NodeEntriesOf(d.nodes_, cluster), d.outbox_.Slice(cluster, d.kind()));
  }

 protected:
  AnomalyOutbox outbox_;
};

/// nodes["cluster/node"], made on first use; key is the caller's scratch string, so a record costs
/// a lookup and no allocation.
template <typename V>
V& NodeEntry(std::map<std::string, V>& nodes, std::string& key, std::string_view cluster, std::string_view node) {
  key.assign(cluster).append(1, '/').append(node);
  auto it = nodes.find(key);
  if (it == nodes.end()) it = nodes.emplace(key, V()).first;
  return it->second;
}
/// The same with a NodeCursor (nodes' entries are erased by NodeEntriesRef::Read alone).
template <typename V>
V& NodeEntry(std::map<std::string, V>& nodes, NodeKey<V>& scratch, std::string_view cluster, std::string_view node) {
  scratch.key.assign(cluster).append(1, '/').append(node);
  return scratch.cursor.Find(nodes, scratch.key);
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

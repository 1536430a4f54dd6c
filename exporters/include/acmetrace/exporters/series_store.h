// The exporters' state: metric families of labelled series with the event time they were last
// set, expiry by event time, a cardinality cap per metric, and per-target (per-node) filtering.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

namespace acmetrace::exporters {

// kSummary: quantile samples only (label `quantile`), no _sum or _count: the processors' quantiles
// are over a rolling hour, as a client library's summary quantiles are over a sliding window.
enum class SeriesType { kGauge, kCounter, kSummary };

/// Which time-to-live a family's series expire by.
enum class Expiry {
  kSubject,  // export.series_ttl_s after the last set (subject no longer seen)
  kAnomaly,  // export.anomaly_ttl_s (an open flag whose close never came)
  kNever,    // self metrics
};

/// A metric family: name, help, type, label names, expiry, and whether ?target= selects it.
struct FamilySpec {
  std::string name;
  std::string help;
  SeriesType type = SeriesType::kGauge;
  std::vector<std::string> label_names;
  Expiry expiry = Expiry::kSubject;
  bool per_target = false;  // a persona family: served for ?target=NODE
};

using FamilyId = int;
using LabelVec = std::vector<prometheus::ClientMetric::Label>;

/// Labels and their exposition text ({a="x",b="y"}, escaped), rendered once when a series is
/// created so a scrape copies bytes instead of formatting 30,000 label sets. Immutable.
struct LabelSet {
  LabelVec labels;
  std::string text;
};
/// Appends s escaped for the exposition text: backslash and newline, and with quote the double quote
/// (a label value; HELP text escapes no quotes).
void AppendEscaped(std::string& out, std::string_view s, bool quote);
/// Appends a sample value as the exposition text writes it (shortest round-trip digits, NaN, +Inf, -Inf).
void AppendSampleValue(std::string& out, double v);

/// Renders labels into a shared LabelSet.
std::shared_ptr<const LabelSet> MakeLabelSet(LabelVec labels);

/// The label set of one series: a key unique within its family, and the labels (shared by the
/// series of several families when the same subject feeds them, as the 13 metrics of one GPU do).
struct SeriesLabels {
  std::string key;
  std::shared_ptr<const LabelSet> labels;
};

struct StoreOptions {
  int64_t series_ttl_ms = 300'000;
  int64_t anomaly_ttl_ms = 86'400'000;
  int64_t max_series_per_metric = 20'000;
};

/// Counts of what the store did to a family, for the self metrics.
struct FamilyCounts {
  int64_t series = 0;
  int64_t dropped = 0;  // not created: the cap was reached
  int64_t expired = 0;
};

/// Labelled series by family, expired in event time: each cluster has a clock (the newest event
/// time seen for it); a series of that cluster not set for its family's TTL is removed when the
/// clock passes. No wall time anywhere, so tests drive expiry by the times they feed.
/// Thread-safe (one mutex): Set from the consuming thread, Collect from HTTP threads.
class SeriesStore {
 public:
  explicit SeriesStore(StoreOptions options);

  /// Declares a family (start-up, before any Set). Names must be unique.
  FamilyId AddFamily(FamilySpec spec);
  const FamilySpec& spec(FamilyId family) const { return families_[static_cast<size_t>(family)]->spec; }

  /// Labels from values in the order of the family's label_names (key: the values joined).
  SeriesLabels MakeLabels(FamilyId family, const std::vector<std::string>& values) const;

  /// Sets a series (creating it unless the cap is reached: then counts a drop and returns false).
  /// cluster is the clock it expires by, ts_ms the event time it was seen at, target the node for
  /// per-target families.
  bool Set(FamilyId family, const SeriesLabels& labels, double value, std::string_view cluster, int64_t ts_ms,
           std::string_view target = {});
  /// Like Set, building the labels only if the series is new (the hot path of the persona).
  template <typename MakeLabelsFn>
  bool SetByKey(FamilyId family, std::string_view key, MakeLabelsFn&& make_labels, double value,
                std::string_view cluster, int64_t ts_ms, std::string_view target = {});
  /// Holds the store's lock for a batch of SetByKeyLocked calls (one lock per record, not per series).
  std::unique_lock<std::mutex> LockForBatch() { return std::unique_lock<std::mutex>(mutex_); }
  /// SetByKey for a caller holding LockForBatch().
  template <typename MakeLabelsFn>
  bool SetByKeyLocked(FamilyId family, std::string_view key, MakeLabelsFn&& make_labels, double value,
                      std::string_view cluster, int64_t ts_ms, std::string_view target = {});
  /// An opaque pointer to a series, for callers holding LockForBatch(): valid while no series of
  /// its family is erased (target_erase_epoch_locked() for per-target families): series move only
  /// by being erased, and hashing keeps nodes in place.
  using SeriesRef = void*;
  template <typename MakeLabelsFn>
  SeriesRef FindOrCreateLocked(FamilyId family, std::string_view key, MakeLabelsFn&& make_labels,
                               std::string_view cluster, std::string_view target = {});
  void SetLocked(SeriesRef ref, double value, int64_t ts_ms) {
    auto* s = static_cast<Series*>(ref);
    s->value = value;
    Touch(*s, ts_ms);
    ++generation_;
  }
  /// Changes whenever a series of a per-target (persona) family is erased (for a caller holding
  /// LockForBatch()); erasures elsewhere (window replacement, anomaly close) do not move it.
  uint64_t target_erase_epoch_locked() const { return target_erase_epoch_; }
  /// Adds delta to a series (0 if new). Returns false if the cap dropped it.
  bool Add(FamilyId family, const SeriesLabels& labels, double delta, std::string_view cluster, int64_t ts_ms);
  /// The value of a series, or nullopt-like NaN if absent.
  double Get(FamilyId family, std::string_view key) const;
  bool Remove(FamilyId family, std::string_view key);
  /// Sets the value of an existing series, keeping its event time (false if absent).
  bool SetValue(FamilyId family, std::string_view key, double value);
  /// Marks a series as shown to scrapers only (a closed anomaly flag kept for a few scrapes): the
  /// state exposition (AppendText with scrape_view false, --metrics-out) leaves it out. False if absent.
  bool SetScrapeOnly(FamilyId family, std::string_view key, bool scrape_only);
  /// Removes the family's series of cluster last set before ts_ms (a window record replaces the
  /// series it feeds: what it no longer has goes).
  void RemoveSetBefore(FamilyId family, std::string_view cluster, int64_t ts_ms);

  /// Each cluster has two event-time clocks: the telemetry clock, which per-target (persona)
  /// families expire by (moved by acme.util records), and the window clock, which every other
  /// family expires by (moved by acme.metrics windows). Each is fed by one stream in order, so a
  /// series is never set behind its clock, however the two streams interleave.
  enum class ClockKind { kTelemetry, kWindows };
  /// Moves one of cluster's clocks to ts_ms (never back) and expires what is due: series of that
  /// clock's families last set more than their TTL before the latest sweep point (a multiple of a
  /// quarter of export.series_ttl_s) the clock has passed. Sweep points are fixed in event time, and
  /// a series set again after a gap that spans one counts as expired once whether or not a sweep ran
  /// in between: what expires, and how often, depends on the data only. Returns series removed.
  int64_t AdvanceClock(std::string_view cluster, int64_t ts_ms, ClockKind kind = ClockKind::kTelemetry);
  int64_t clock_ms(std::string_view cluster, ClockKind kind = ClockKind::kTelemetry) const;

  /// The families for exposition: every family, or for a non-empty target only the per-target
  /// families' series of that node ("NODE" or "CLUSTER/NODE"). Self families (series, dropped,
  /// expired per metric) are appended when target is empty. No sample timestamps.
  std::vector<prometheus::MetricFamily> Collect(std::string_view target = {}) const;
  /// Which families a target-less AppendText renders.
  enum class Families {
    kAll,
    kNotPerTarget,  // leaves out the per-target (persona) families, as the shipped scrape config does
  };
  /// The same as text (exposition format 0.0.4, what prometheus-cpp's TextSerializer writes for
  /// Collect(target)), appended to out, rendered directly from the pre-rendered labels. Series
  /// marked SetScrapeOnly are included only in the scrape view.
  void AppendText(std::string& out, std::string_view target = {}, bool scrape_view = true,
                  Families families = Families::kAll) const;
  /// One series of a per-target family as a scrape of its target serves it.
  struct TargetSample {
    const FamilySpec& family;
    std::string_view labels_text;  // {a="x",...}, escaped
    double value;
    std::string_view cluster;
    std::string_view target;
    // No other series of this store ever has it (one gone and back gets another): its labels,
    // cluster and target stay as they are, so a consumer can keep what it derives from them by it.
    uint64_t serial;
  };
  /// Calls fn for every series of the per-target families (scrape view): what a scrape of every
  /// target would serve, in one pass over the store instead of one per target.
  void ForEachTargetSample(const std::function<void(const TargetSample&)>& fn) const;
  /// Changes with every mutation (a rendering of an unchanged store can be reused).
  uint64_t generation() const;
  /// Every target (node) with per-target series, by cluster.
  std::map<std::string, std::vector<std::string>> Targets() const;

  FamilyCounts counts(FamilyId family) const;
  int64_t total_series() const;

 private:
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  struct Family;
  static constexpr int64_t kNeverSet = INT64_MIN;
  struct Series {
    std::shared_ptr<const LabelSet> labels;
    // labels->text, held here so that a walk over every series does not visit each LabelSet (an
    // allocation of its own: a cache miss per series, 65 % of ForEachTargetSample's time).
    std::string_view labels_text;
    double value = 0;
    int64_t set_ms = kNeverSet;
    std::string cluster;
    std::string target;
    Family* family = nullptr;
    bool scrape_only = false;
    uint64_t serial = 0;
    // Where it sits in its family's `dense` list, and its key in `series` (a node's key never moves).
    uint32_t dense_at = 0;
    const std::string* key = nullptr;
  };
  struct Family {
    FamilySpec spec;
    int64_t ttl_ms = -1;        // -1: never expires
    int64_t sweep_every_ms = 1;  // the sweep points' spacing
    // Hashed, not sorted: the persona's 100 lookups per record dominate the exporter's time, and
    // exposition order within a family does not matter to Prometheus.
    std::unordered_map<std::string, Series, KeyHash, std::equal_to<>> series;
    // The same series in creation order (an erased one's place taken by the last): what walks every
    // series (ForEachTargetSample, the sweeps) reads them close to the order they were allocated in,
    // not in the hash map's bucket order, a cache miss each (24 % of a scale-1 backfill's CPU).
    std::vector<Series*> dense;
    int64_t dropped = 0;
    int64_t expired = 0;
  };
  uint64_t generation_ = 0;   // guarded by mutex_
  uint64_t next_serial_ = 0;  // guarded by mutex_
  uint64_t target_erase_epoch_ = 0;  // guarded by mutex_
  struct Clock {
    int64_t now_ms = INT64_MIN;
    int64_t swept_at_ms = INT64_MIN;  // the latest sweep point passed
  };
  // Sets s's time, counting an expiry when the gap since its last set spans a sweep point.
  static void Touch(Series& s, int64_t ts_ms) {
    const Family& f = *s.family;
    if (s.set_ms != kNeverSet && f.ttl_ms >= 0 && ts_ms - s.set_ms > f.ttl_ms) {
      const int64_t q = f.sweep_every_ms;
      const int64_t due = s.set_ms + f.ttl_ms;  // first sweep point strictly after due expires it
      const int64_t first = (due >= 0 ? due / q : (due - q + 1) / q) * q + q;
      if (first < ts_ms) ++s.family->expired;
    }
    s.set_ms = ts_ms;
  }

  Series* FindOrCreate(Family& f, std::string_view key, const std::shared_ptr<const LabelSet>* labels,
                       std::shared_ptr<const LabelSet> (*make)(void*), void* make_ctx, bool& created);
  // FindOrCreate for Set and Add (cluster and target recorded when it is new); nullptr past the cap.
  Series* SeriesOf(FamilyId family, const SeriesLabels& labels, std::string_view cluster, std::string_view target);
  // The series of key in family, or nullptr.
  Series* FindLocked(FamilyId family, std::string_view key);
  int64_t TtlMs(Expiry expiry) const;
  int64_t SweepEveryMs() const;
  int64_t SweepLocked(const std::string& cluster, ClockKind kind, int64_t at_ms);
  // Erases a series from both of its family's indexes; the iterator after it.
  using SeriesIt = std::unordered_map<std::string, Series, KeyHash, std::equal_to<>>::iterator;
  SeriesIt EraseLocked(Family& f, SeriesIt it);

  StoreOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Family>> families_;
  std::map<std::string, std::array<Clock, 2>, std::less<>> clocks_;  // by cluster, by ClockKind
};

template <typename MakeLabelsFn>
bool SeriesStore::SetByKey(FamilyId family, std::string_view key, MakeLabelsFn&& make_labels, double value,
                           std::string_view cluster, int64_t ts_ms, std::string_view target) {
  std::lock_guard<std::mutex> lock(mutex_);
  return SetByKeyLocked(family, key, std::forward<MakeLabelsFn>(make_labels), value, cluster, ts_ms, target);
}

template <typename MakeLabelsFn>
SeriesStore::SeriesRef SeriesStore::FindOrCreateLocked(FamilyId family, std::string_view key, MakeLabelsFn&& make_labels,
                                                       std::string_view cluster, std::string_view target) {
  auto thunk = [](void* ctx) -> std::shared_ptr<const LabelSet> {
    return (*static_cast<std::remove_reference_t<MakeLabelsFn>*>(ctx))();
  };
  Family& f = *families_[static_cast<size_t>(family)];
  bool created = false;
  Series* s = FindOrCreate(f, key, nullptr, thunk, const_cast<void*>(static_cast<const void*>(&make_labels)), created);
  if (s != nullptr && created) {
    s->cluster = cluster;
    s->target = target;
  }
  return s;
}

template <typename MakeLabelsFn>
bool SeriesStore::SetByKeyLocked(FamilyId family, std::string_view key, MakeLabelsFn&& make_labels, double value,
                                 std::string_view cluster, int64_t ts_ms, std::string_view target) {
  SeriesRef s = FindOrCreateLocked(family, key, std::forward<MakeLabelsFn>(make_labels), cluster, target);
  if (s == nullptr) return false;
  SetLocked(s, value, ts_ms);
  return true;
}

}  // namespace acmetrace::exporters

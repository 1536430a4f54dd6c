// A mergeable quantile sketch with a relative-error guarantee (DDSketch's log-bucket scheme).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace acmetrace::processors {

class StateWriter;
class StateReader;

/// Quantiles of non-negative values within relative error alpha (DDSketch, Masson et al., VLDB
/// 2019): value x > 0 lands in bucket ceil(log_gamma(x)) with gamma = (1+alpha)/(1-alpha), and a
/// bucket answers with the point that is within alpha of every value in it. Values at or below
/// kMinIndexable (and negative values) are counted in a zero bucket that answers 0; values above
/// kMaxIndexable (+inf included) count as kMaxIndexable, so a hostile 1e308 cannot make the
/// buckets span 10^314 (at most ~2,100 buckets, 16 KiB, at alpha 0.01). Counts are
/// integers, so Merge is exact, associative and commutative: N partial sketches merged equal the
/// sketch of all the values, in any order. Memory: one counter per bucket between the smallest and
/// largest value seen (about 800 for 1 s .. 10^7 s at alpha 0.01). Value type, not thread-safe.
class QuantileSketch {
 public:
  static constexpr double kMinIndexable = 1e-6;
  /// Far above every quantity sketched (percents, MiB, seconds of queueing).
  static constexpr double kMaxIndexable = 1e12;
  /// The accuracies a sketch may have: [kMinAccuracy, kMaxAccuracy). Below, the buckets between the
  /// indexable bounds would be millions (and their indices beyond int32 near 1e-12).
  static constexpr double kMinAccuracy = 0.001;
  static constexpr double kMaxAccuracy = 0.5;

  explicit QuantileSketch(double relative_accuracy = 0.01);

  void Add(double value) { Add(value, 1); }
  void Add(double value, uint64_t count);
  /// Adds other's counts; both must have the same relative accuracy (else nothing is merged and
  /// false is returned).
  bool Merge(const QuantileSketch& other);
  /// Removes counts that an earlier Merge added (other must be a sketch merged into this one):
  /// rolling windows add the newest part and subtract the oldest. Exact: counts are integers.
  void Subtract(const QuantileSketch& other);
  /// The value at rank floor(q * (count - 1)) (0 <= q <= 1) within relative error alpha; NaN if empty.
  double Quantile(double q) const;

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  double relative_accuracy() const { return alpha_; }
  void Clear();

  void Save(StateWriter& out) const;
  /// Restores what Save wrote; false on malformed input.
  bool Load(StateReader& in);
  /// The sketch's fields, for the snapshot codec (state_codec.h): the accuracy, the counts, the
  /// buckets. Read back, the accuracy must be in [kMinAccuracy, kMaxAccuracy), the buckets must lie
  /// between the indexable bounds' and add up to the count.
  template <class Io, class Self>
  static void Fields(Io& io, Self& s) {
    io(s.alpha_, s.count_, s.zero_count_, s.offset_, s.bins_);
    if constexpr (Io::kReading) s.AfterRead(io);
  }

  bool operator==(const QuantileSketch& other) const;

 private:
  // Derives what the accuracy implies and checks what was read; a mismatch fails in.
  template <class Reader>
  void AfterRead(Reader& in) {
    if (!(alpha_ >= kMinAccuracy && alpha_ < kMaxAccuracy)) return in.Fail();
    std::vector<uint64_t> bins = std::move(bins_);
    const uint64_t count = count_, zero_count = zero_count_;
    const int32_t offset = offset_;
    *this = QuantileSketch(alpha_);
    // Buckets no value could reach: a merge with them would allocate up to 2^31 counters.
    if (!bins.empty() && (offset < IndexOf(kMinIndexable) ||
                          static_cast<int64_t>(offset) + static_cast<int64_t>(bins.size()) - 1 > IndexOf(kMaxIndexable))) {
      return in.Fail();
    }
    bins_ = std::move(bins);
    count_ = count;
    zero_count_ = zero_count;
    offset_ = offset;
    uint64_t total = zero_count_;
    for (uint64_t b : bins_) total += b;
    if (total != count_) in.Fail();
  }
  int32_t IndexOf(double value) const;
  double ValueOf(int32_t index) const;

  double alpha_;
  double gamma_;
  double inv_log_gamma_;
  int32_t offset_ = 0;           // bucket index of bins_[0]
  std::vector<uint64_t> bins_;   // dense from offset_
  uint64_t zero_count_ = 0;
  uint64_t count_ = 0;
  // The last value added and its bucket: telemetry repeats values (a node's GPUs, a steady
  // metric), and each repeat saves a logarithm.
  double last_value_ = 0;
  int32_t last_index_ = 0;
};

}  // namespace acmetrace::processors

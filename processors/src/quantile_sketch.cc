// QuantileSketch: dense log buckets grown on demand in both directions.
#include "acmetrace/processors/quantile_sketch.h"

#include <cmath>
#include <limits>

#include "acmetrace/processors/state_codec.h"

namespace acmetrace::processors {

QuantileSketch::QuantileSketch(double relative_accuracy)
    : alpha_(relative_accuracy),
      gamma_((1 + relative_accuracy) / (1 - relative_accuracy)),
      inv_log_gamma_(1.0 / std::log((1 + relative_accuracy) / (1 - relative_accuracy))) {}

int32_t QuantileSketch::IndexOf(double value) const {
  return static_cast<int32_t>(std::ceil(std::log(value) * inv_log_gamma_));
}

double QuantileSketch::ValueOf(int32_t index) const {
  return 2.0 * std::pow(gamma_, index) / (gamma_ + 1.0);
}

void QuantileSketch::Add(double value, uint64_t count) {
  if (count == 0 || std::isnan(value)) return;
  count_ += count;
  if (!(value > kMinIndexable)) {
    zero_count_ += count;
    return;
  }
  if (value > kMaxIndexable) value = kMaxIndexable;
  if (value != last_value_) {
    last_value_ = value;
    last_index_ = IndexOf(value);
  }
  const int32_t index = last_index_;
  if (bins_.empty()) {
    offset_ = index;
    bins_.assign(1, 0);
  } else if (index < offset_) {
    bins_.insert(bins_.begin(), static_cast<size_t>(offset_ - index), 0);
    offset_ = index;
  } else if (index >= offset_ + static_cast<int32_t>(bins_.size())) {
    bins_.resize(static_cast<size_t>(index - offset_) + 1, 0);
  }
  bins_[static_cast<size_t>(index - offset_)] += count;
}

bool QuantileSketch::Merge(const QuantileSketch& other) {
  if (other.alpha_ != alpha_) return false;
  if (other.count_ == 0) return true;
  count_ += other.count_;
  zero_count_ += other.zero_count_;
  if (other.bins_.empty()) return true;
  const int32_t other_end = other.offset_ + static_cast<int32_t>(other.bins_.size());
  if (bins_.empty()) {
    offset_ = other.offset_;
    bins_ = other.bins_;
    return true;
  }
  if (other.offset_ < offset_) {
    bins_.insert(bins_.begin(), static_cast<size_t>(offset_ - other.offset_), 0);
    offset_ = other.offset_;
  }
  if (other_end > offset_ + static_cast<int32_t>(bins_.size())) bins_.resize(static_cast<size_t>(other_end - offset_), 0);
  const size_t shift = static_cast<size_t>(other.offset_ - offset_);
  for (size_t i = 0; i < other.bins_.size(); ++i) bins_[shift + i] += other.bins_[i];
  return true;
}

void QuantileSketch::Subtract(const QuantileSketch& other) {
  if (other.alpha_ != alpha_ || other.count_ == 0) return;
  count_ -= other.count_;
  zero_count_ -= other.zero_count_;
  for (size_t i = 0; i < other.bins_.size(); ++i) {
    if (other.bins_[i] == 0) continue;
    bins_[static_cast<size_t>(other.offset_ + static_cast<int32_t>(i) - offset_)] -= other.bins_[i];
  }
}

double QuantileSketch::Quantile(double q) const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  const auto rank = static_cast<uint64_t>(std::floor(q * static_cast<double>(count_ - 1)));
  if (rank < zero_count_) return 0.0;
  uint64_t seen = zero_count_;
  for (size_t i = 0; i < bins_.size(); ++i) {
    seen += bins_[i];
    if (seen > rank) return ValueOf(offset_ + static_cast<int32_t>(i));
  }
  return ValueOf(offset_ + static_cast<int32_t>(bins_.size()) - 1);
}

void QuantileSketch::Clear() {
  bins_.clear();
  offset_ = 0;
  zero_count_ = 0;
  count_ = 0;
}

void QuantileSketch::Save(StateWriter& out) const { out(*this); }

bool QuantileSketch::Load(StateReader& in) {
  in(*this);
  return in.ok();
}

bool QuantileSketch::operator==(const QuantileSketch& other) const {
  if (alpha_ != other.alpha_ || count_ != other.count_ || zero_count_ != other.zero_count_) return false;
  // Equal content, whatever the padding of zero buckets at either end.
  auto trimmed = [](const QuantileSketch& s, int32_t& first, int32_t& last) {
    first = 0;
    last = static_cast<int32_t>(s.bins_.size());
    while (first < last && s.bins_[static_cast<size_t>(first)] == 0) ++first;
    while (last > first && s.bins_[static_cast<size_t>(last - 1)] == 0) --last;
  };
  int32_t a0, a1, b0, b1;
  trimmed(*this, a0, a1);
  trimmed(other, b0, b1);
  if (a1 - a0 != b1 - b0) return false;
  if (a1 > a0 && offset_ + a0 != other.offset_ + b0) return false;
  for (int32_t i = 0; i < a1 - a0; ++i) {
    if (bins_[static_cast<size_t>(a0 + i)] != other.bins_[static_cast<size_t>(b0 + i)]) return false;
  }
  return true;
}

}  // namespace acmetrace::processors

// Deterministic randomness for the synthetic generator: our own generator and transforms, because the
// std:: distributions may change their output between standard-library versions and ours must not.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "acmetrace/core/fnv.h"

namespace acmetrace::producers::synth {

/// SplitMix64 step: seeds the main generator and mixes keys into stream seeds.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A well-mixed 64-bit function of two values: independent streams are keyed by (seed, purpose, index).
inline uint64_t MixKey(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0xD6E8FEB86659FD93ull);
  SplitMix64(s);
  return SplitMix64(s);
}

/// FNV-1a of a string, for keying streams by name (cluster, metric).
inline uint64_t HashName(std::string_view name) { return core::Fnv1a<uint64_t>(name); }

/// Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9).
double NormalQuantile(double p);

/// Standard normal CDF.
inline double NormalCdf(double z) { return 0.5 * std::erfc(-z * 0.70710678118654752440); }

/// xoshiro256** with our own transforms. Value type; not thread-safe (one per stream).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& word : state_) word = SplitMix64(s);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  /// Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  /// Uniform in (0, 1): safe for logarithms and quantile functions.
  double OpenUniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  /// Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias below 2^-32 for our n).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  bool Bernoulli(double p) { return Uniform() < p; }
  double Normal() { return NormalQuantile(OpenUniform()); }
  double Exponential(double mean) { return -mean * std::log(OpenUniform()); }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

/// Stratified uniforms: every block of `strata` draws puts exactly one value in each of the equal
/// strata of [0, 1), in shuffled order. Heavy-tailed job attributes drawn this way keep a few days'
/// sample means close to the model's (a plain iid sample of 20 pretraining jobs would not). Value type.
class StratifiedUniform {
 public:
  StratifiedUniform(uint64_t seed, int strata) : rng_(seed), order_(strata), next_(strata) {}

  double Next() {
    if (next_ == static_cast<int>(order_.size())) Refill();
    const double stratum = order_[next_++];
    return (stratum + rng_.OpenUniform()) / static_cast<double>(order_.size());
  }

 private:
  void Refill() {
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int>(i);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng_.Below(i)]);
    next_ = 0;
  }

  Rng rng_;
  std::vector<int> order_;
  int next_;
};

/// Picks an index with probability proportional to weights[i], from a uniform u in [0, 1).
inline size_t PickWeighted(const std::vector<double>& cumulative, double u) {
  const double target = u * cumulative.back();
  size_t lo = 0, hi = cumulative.size() - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (cumulative[mid] > target) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

/// Normal deviates from a table, for per-sample telemetry noise where a 1/65536 quantile resolution is
/// plenty and speed matters (hundreds of millions of draws per run). Immutable after construction;
/// thread-safe to share.
class NormalTable {
 public:
  NormalTable();
  /// Four deviates from one 64-bit random word.
  void Four(uint64_t bits, float out[4]) const {
    out[0] = table_[bits & 0xFFFF];
    out[1] = table_[(bits >> 16) & 0xFFFF];
    out[2] = table_[(bits >> 32) & 0xFFFF];
    out[3] = table_[bits >> 48];
  }
  float At(uint64_t bits16) const { return table_[bits16 & 0xFFFF]; }

 private:
  std::vector<float> table_;
};

}  // namespace acmetrace::producers::synth

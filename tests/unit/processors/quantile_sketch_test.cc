// QuantileSketch: relative error against exact quantiles on heavy-tailed data, exact merges.
#include "acmetrace/processors/quantile_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "acmetrace/processors/state_codec.h"

namespace acmetrace::processors {
namespace {

void ExpectWithinRelativeError(const std::vector<double>& values, const QuantileSketch& sketch, double alpha) {
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    const double exact = sorted[static_cast<size_t>(std::floor(q * static_cast<double>(sorted.size() - 1)))];
    const double estimate = sketch.Quantile(q);
    if (exact <= QuantileSketch::kMinIndexable) {
      EXPECT_EQ(estimate, 0.0) << "q=" << q;
    } else {
      EXPECT_LE(std::fabs(estimate - exact), alpha * exact * (1 + 1e-9)) << "q=" << q << " exact=" << exact;
    }
  }
}

// Job run times look like this: a mass of short jobs and a tail over seven orders of magnitude.
std::vector<double> HeavyTailed(uint32_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> lognormal(4.8, 2.2);  // median ~122 s
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const double r = u(rng);
    if (r < 0.05) {
      out.push_back(0);  // queue times of jobs that start at once
    } else if (r < 0.15) {
      out.push_back(std::floor(1.0 / std::pow(u(rng), 1.0 / 1.1)));  // Pareto, alpha 1.1
    } else {
      out.push_back(lognormal(rng));
    }
  }
  return out;
}

TEST(QuantileSketchTest, WithinOnePercentOfExactQuantilesOnHeavyTailedData) {
  const std::vector<double> values = HeavyTailed(7, 200'000);
  QuantileSketch sketch(0.01);
  for (double v : values) sketch.Add(v);
  EXPECT_EQ(sketch.count(), values.size());
  ExpectWithinRelativeError(values, sketch, 0.01);
}

TEST(QuantileSketchTest, TighterAccuracyHoldsToo) {
  const std::vector<double> values = HeavyTailed(11, 50'000);
  QuantileSketch sketch(0.001);
  for (double v : values) sketch.Add(v);
  ExpectWithinRelativeError(values, sketch, 0.001);
}

TEST(QuantileSketchTest, MergeOfPartsEqualsTheWholeInAnyOrder) {
  const std::vector<double> values = HeavyTailed(3, 60'000);
  QuantileSketch whole(0.01);
  for (double v : values) whole.Add(v);
  std::vector<QuantileSketch> parts(5, QuantileSketch(0.01));
  for (size_t i = 0; i < values.size(); ++i) parts[(i * 7919) % parts.size()].Add(values[i]);
  QuantileSketch forward(0.01), backward(0.01);
  for (size_t i = 0; i < parts.size(); ++i) forward.Merge(parts[i]);
  for (size_t i = parts.size(); i-- > 0;) backward.Merge(parts[i]);
  EXPECT_TRUE(forward == whole);
  EXPECT_TRUE(backward == whole);
  for (double q : {0.5, 0.95, 0.99}) {
    EXPECT_EQ(forward.Quantile(q), whole.Quantile(q));
    EXPECT_EQ(backward.Quantile(q), whole.Quantile(q));
  }
  ExpectWithinRelativeError(values, forward, 0.01);
}

TEST(QuantileSketchTest, RefusesToMergeDifferentAccuracies) {
  QuantileSketch a(0.01), b(0.02);
  b.Add(5);
  EXPECT_FALSE(a.Merge(b));
  EXPECT_TRUE(a.empty());
}

TEST(QuantileSketchTest, EmptyZerosAndSingleValues) {
  QuantileSketch s(0.01);
  EXPECT_TRUE(std::isnan(s.Quantile(0.5)));
  s.Add(0);
  s.Add(-3);  // clamped into the zero bucket
  EXPECT_EQ(s.Quantile(0.99), 0.0);
  QuantileSketch one(0.01);
  one.Add(100);
  EXPECT_NEAR(one.Quantile(0.5), 100, 1.0);
  one.Add(std::nan(""));
  EXPECT_EQ(one.count(), 1u);
}

TEST(QuantileSketchTest, SaveAndLoadGiveAnEqualSketch) {
  QuantileSketch s(0.01);
  for (double v : HeavyTailed(5, 1000)) s.Add(v);
  StateWriter out;
  s.Save(out);
  StateReader in(out.bytes());
  QuantileSketch back;
  ASSERT_TRUE(back.Load(in));
  EXPECT_TRUE(in.at_end());
  EXPECT_TRUE(back == s);
  // A truncated snapshot is refused, not misread.
  const std::string cut = out.bytes().substr(0, out.bytes().size() - 3);
  StateReader short_in(cut);
  QuantileSketch broken;
  EXPECT_FALSE(broken.Load(short_in));
}

TEST(QuantileSketchTest, ALoadedSketchMustHaveAnAccuracyAndBucketsValuesCanHave) {
  // Found by snapshot_fuzz: a loaded sketch whose first bucket was -2^31 made a Merge with a real
  // sketch allocate 7.5 GB. Buckets beyond the indexable values' and accuracies outside
  // [kMinAccuracy, kMaxAccuracy) are refused.
  auto load = [](double alpha, int32_t offset, size_t buckets) {
    StateWriter out;
    out(alpha, uint64_t{buckets}, uint64_t{0}, offset, std::vector<uint64_t>(buckets, 1));
    StateReader in(out.bytes());
    QuantileSketch s;
    return s.Load(in);
  };
  QuantileSketch real(0.01);
  real.Add(QuantileSketch::kMinIndexable * 1.5);
  real.Add(QuantileSketch::kMaxIndexable);
  StateWriter real_out;
  real.Save(real_out);
  StateReader real_in(real_out.bytes());
  QuantileSketch back;
  EXPECT_TRUE(back.Load(real_in)) << "the widest real sketch loads";
  EXPECT_TRUE(load(0.01, 0, 3));
  EXPECT_FALSE(load(0.01, INT32_MIN, 1));
  EXPECT_FALSE(load(0.01, 1'000'000, 1));
  EXPECT_FALSE(load(0.01, 0, 1'500));  // runs past the top bucket (about 1,382 at this accuracy)
  EXPECT_FALSE(load(1e-12, 0, 1));
  EXPECT_FALSE(load(0.5, 0, 1));
  EXPECT_TRUE(load(QuantileSketch::kMinAccuracy, 0, 1));
}

TEST(QuantileSketchTest, HugeAndInfiniteValuesCountAtTheTopBucketWithoutGrowingWithoutBound) {
  // SM_ACTIVE 1e308 scaled to percent is +inf: its bucket index was a cast of infinity, and the
  // buckets were resized to it (std::length_error, process aborted).
  QuantileSketch sketch(0.01);
  sketch.Add(0.5);
  sketch.Add(1e308 * 100);
  sketch.Add(std::numeric_limits<double>::infinity());
  sketch.Add(1e300);
  EXPECT_EQ(sketch.count(), 4u);
  EXPECT_NEAR(sketch.Quantile(0), 0.5, 0.5 * 0.01);
  EXPECT_NEAR(sketch.Quantile(1), QuantileSketch::kMaxIndexable, QuantileSketch::kMaxIndexable * 0.01);
  QuantileSketch other(0.01);
  other.Add(1e-5);
  EXPECT_TRUE(sketch.Merge(other));  // the widest span: kMinIndexable .. kMaxIndexable
  EXPECT_EQ(sketch.count(), 5u);
  EXPECT_NEAR(sketch.Quantile(0), 1e-5, 1e-5 * 0.01);
}

}  // namespace
}  // namespace acmetrace::processors

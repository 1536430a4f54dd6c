// The published statistics the generator is calibrated on, parsed from the embedded release CSVs.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace acmetrace::producers::synth {

/// One cluster's row of the release's cluster_summary.csv. Value type.
class PublishedSummary {
 public:
  /// The row whose id matches cluster case-insensitively ("seren" finds "Seren"); empty if none.
  static PublishedSummary ForCluster(std::string_view cluster);

  bool empty() const { return values_.empty(); }
  /// A column's value; 0 when the column is missing or empty in the release.
  double Get(std::string_view column) const;

 private:
  std::map<std::string, double, std::less<>> values_;
};

/// A published distribution as its quantile function (1000 points of the release's CDF, linearly
/// interpolated). Value type.
class QuantileTable {
 public:
  /// The table for (cluster, metric) from utilization_cdf.csv, e.g. ("seren", "GPU_UTIL"); empty if
  /// the release has none.
  static QuantileTable ForMetric(std::string_view cluster, std::string_view metric);

  bool empty() const { return probs_.empty(); }
  /// The value at cumulative probability p in [0, 1].
  double Quantile(double p) const;
  /// Share of the distribution at or below value (the CDF).
  double CdfAt(double value) const;

 private:
  std::vector<double> probs_;   // increasing, 0..1
  std::vector<double> values_;  // non-decreasing
};

}  // namespace acmetrace::producers::synth

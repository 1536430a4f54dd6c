// Parses the embedded release CSVs. Runs once per generator run, so clarity beats speed here.
#include "synth/published_stats.h"

#include <algorithm>
#include <cctype>

#include "acmetrace/producers/published_data.h"
#include "fast_float/fast_float.h"

namespace acmetrace::producers::synth {
namespace {

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.push_back(line);
    pos = end + 1;
  }
  return lines;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (true) {
    const size_t comma = line.find(',', pos);
    if (comma == std::string_view::npos) {
      fields.push_back(line.substr(pos));
      return fields;
    }
    fields.push_back(line.substr(pos, comma - pos));
    pos = comma + 1;
  }
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool ParseDouble(std::string_view text, double& out) {
  if (text.empty()) return false;
  auto result = fast_float::from_chars(text.data(), text.data() + text.size(), out);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

}  // namespace

PublishedSummary PublishedSummary::ForCluster(std::string_view cluster) {
  PublishedSummary summary;
  const std::string csv = PublishedClusterSummaryCsv();
  const auto lines = SplitLines(csv);
  if (lines.empty()) return summary;
  const auto header = SplitFields(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto fields = SplitFields(lines[i]);
    if (fields.empty() || !EqualsIgnoreCase(fields[0], cluster)) continue;
    for (size_t c = 1; c < fields.size() && c < header.size(); ++c) {
      double value;
      if (ParseDouble(fields[c], value)) summary.values_.emplace(std::string(header[c]), value);
    }
  }
  return summary;
}

double PublishedSummary::Get(std::string_view column) const {
  const auto it = values_.find(column);
  return it == values_.end() ? 0.0 : it->second;
}

QuantileTable QuantileTable::ForMetric(std::string_view cluster, std::string_view metric) {
  QuantileTable table;
  const std::string csv = PublishedUtilizationCdfCsv();
  for (std::string_view line : SplitLines(csv)) {
    const auto fields = SplitFields(line);
    if (fields.size() != 5 || !EqualsIgnoreCase(fields[0], cluster) || fields[1] != metric) continue;
    double percent, value;
    if (!ParseDouble(fields[3], percent) || !ParseDouble(fields[4], value)) continue;
    table.probs_.push_back(percent / 100.0);
    table.values_.push_back(value);
  }
  // The release's points are sorted already; sorting keeps Quantile() correct if a copy is not.
  std::vector<size_t> order(table.probs_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return table.probs_[a] < table.probs_[b]; });
  std::vector<double> probs, values;
  for (size_t i : order) {
    probs.push_back(table.probs_[i]);
    values.push_back(i == order.front() ? table.values_[i] : std::max(table.values_[i], values.back()));
  }
  table.probs_ = std::move(probs);
  table.values_ = std::move(values);
  return table;
}

double QuantileTable::Quantile(double p) const {
  if (probs_.empty()) return 0.0;
  if (p <= probs_.front()) return values_.front();
  if (p >= probs_.back()) return values_.back();
  const size_t hi = static_cast<size_t>(std::upper_bound(probs_.begin(), probs_.end(), p) - probs_.begin());
  const size_t lo = hi - 1;
  const double span = probs_[hi] - probs_[lo];
  const double t = span > 0 ? (p - probs_[lo]) / span : 0.0;
  return values_[lo] + t * (values_[hi] - values_[lo]);
}

double QuantileTable::CdfAt(double value) const {
  if (values_.empty()) return 0.0;
  if (value < values_.front()) return 0.0;
  if (value >= values_.back()) return 1.0;
  // The last point whose value is <= value: flat runs (a mass at 0) count entirely.
  const size_t hi = static_cast<size_t>(std::upper_bound(values_.begin(), values_.end(), value) - values_.begin());
  const size_t lo = hi - 1;
  const double span = values_[hi] - values_[lo];
  const double t = span > 0 ? (value - values_[lo]) / span : 0.0;
  return probs_[lo] + t * (probs_[hi] - probs_[lo]);
}

}  // namespace acmetrace::producers::synth

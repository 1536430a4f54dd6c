// Maps the processors' acme.metrics keys (docs/processors.md) to acmetrace_* families
// (docs/metrics.md): names, labels, the unit rule and which window view feeds which family.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/series_store.h"

namespace acmetrace::exporters {

/// A processor metric key split into its name and labels: "jobs_running{type=SFT}".
struct MetricKey {
  std::string_view name;
  std::vector<std::pair<std::string_view, std::string_view>> labels;
};
/// Parses "name" or "name{l=v,...}"; false if malformed (unbalanced brace, label without '=').
bool ParseMetricKey(std::string_view key, MetricKey& out);

/// The job types and final states of the release (docs/synth.md; the synthesizer writes the same):
/// the label sets of the job counters that exist at 0 from a cluster's first record.
inline constexpr std::string_view kJobTypes[] = {"Pretrain", "Eval", "SFT", "MLLM", "Debug", "Other"};
inline constexpr std::string_view kJobStates[] = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"};

/// Applies acme.metrics windows to a SeriesStore. Not thread-safe itself (one consuming thread).
class WindowMapping {
 public:
  WindowMapping(const ExportOptions& options, SeriesStore& store);
  /// Sets the families fed by the window's view (base window or the hour view; other views are
  /// ignored) and removes the cluster's series of those gauge families the window no longer has.
  /// Keys that map to nothing are counted in unmapped().
  void Apply(const core::MetricsWindow& window);
  /// Creates the cluster's job and record counters at 0 for every known label set (job types x
  /// states x gpu/cpu), leaving existing ones as they are.
  void CreateKnownCounters(std::string_view cluster);
  /// The family a key name feeds in a view (-1 if none), for tests.
  FamilyId FamilyOf(std::string_view name, int64_t window_s) const;
  int64_t unmapped() const { return unmapped_; }

 private:
  struct Rule {
    FamilyId family = -1;
    double scale = 1;
    std::vector<std::string> key_labels;  // the key's label feeding each family label after cluster
    std::string only_stat;               // keep only this stat= value and drop the label
    double max_value = std::numeric_limits<double>::infinity();
  };
  void AddRule(int64_t window_s, const char* key_name, FamilySpec spec, double scale,
               std::vector<std::string> key_labels = {}, std::string only_stat = {});

  const ExportOptions& options_;
  SeriesStore& store_;
  std::unordered_map<std::string, Rule> rules_;                  // "window_s/name" -> rule
  std::unordered_map<int64_t, std::vector<FamilyId>> replaced_;  // window_s -> its gauge families
  int64_t unmapped_ = 0;
  std::string lookup_;
  std::vector<std::string> values_;
};

}  // namespace acmetrace::exporters

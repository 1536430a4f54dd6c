// Samples as OpenMetrics text with timestamps: what `promtool tsdb create-blocks-from openmetrics`
// reads. The exporter renders exposition format 0.0.4 without timestamps; a scrape's target labels
// (job, instance) and time are added here, as Prometheus adds them when it stores a scrape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/status.h"

namespace acmetrace::history {

/// The target labels a scrape adds, rendered once: `job="J",instance="I"` (escaped, no braces).
std::string RenderTargetLabels(std::string_view job, std::string_view instance);

/// Appends one sample line: name{target_labels,labels} value timestamp. labels_text is the
/// exporter's rendering ({a="x",...} or empty); ts_ms is written in seconds (OpenMetrics).
void AppendOpenMetricsSample(std::string& out, std::string_view name, std::string_view labels_text,
                             std::string_view target_labels, double value, int64_t ts_ms);

/// Appends every sample of a 0.0.4 exposition (comment lines skipped) with target_labels and ts_ms.
/// Fails on a line that is not a sample (the exporter's own text: a failure is a bug, not input).
core::Status AppendOpenMetricsSamples(std::string& out, std::string_view exposition, std::string_view target_labels,
                                      int64_t ts_ms);

/// Where a sample line's series text (name and {labels}) ends: the index after '}' or the name;
/// npos when there is no name or the labels are not closed (quoted values may hold '}' and \").
size_t SeriesTextEnd(std::string_view line);

/// The line that ends an OpenMetrics text.
inline constexpr std::string_view kOpenMetricsEnd = "# EOF\n";

}  // namespace acmetrace::history

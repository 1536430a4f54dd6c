// The export.* configuration keys (declared here, beside the code that reads them) and the options
// they make.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acmetrace/core/config.h"

namespace acmetrace::exporters {

/// Everything the exporters read from export.* (and process.units, windows_s). Value type.
struct ExportOptions {
  std::string listen = "127.0.0.1:9400";
  std::string basic_auth_user;      // empty = no authentication
  std::string basic_auth_password;
  int http_threads = 4;
  int64_t render_cache_ms = 1000;
  int64_t series_ttl_ms = 300'000;       // event time a subject may stay silent before its series go
  int64_t anomaly_ttl_ms = 86'400'000;   // an open anomaly whose close never comes
  int64_t max_series_per_metric = 20'000;
  std::string model_name = "NVIDIA A100-SXM4-80GB";
  std::string hostname_label = "Hostname";  // or "hostname"
  std::string driver_version = "535.129.03";  // the persona's DCGM_FI_DRIVER_VERSION label (synthetic)
  bool gr_engine_active = false;  // also serve DCGM_FI_PROF_GR_ENGINE_ACTIVE, derived from GPU_UTIL
  double ib_bytes_per_raw_unit = 1e6;
  bool input_percent = false;  // process.units == percent: ratios arrive as percent
  int64_t base_window_s = 60;   // process.windows_s' smallest: state, totals, telemetry
  int64_t hour_window_s = 3600; // the view of quantiles and failure ratio
  // Wall time between a scraper's scrapes: a closed anomaly flag stays exposed for two of them, so
  // a flag shorter than a scrape interval is still seen (docs/metrics.md).
  int64_t scrape_interval_ms = 15'000;
  // The anomaly kinds whose acmetrace_anomalies_total{cluster,kind} start at 0 when a cluster first
  // appears: every declared detect.<kind> (from the config; empty = none pre-created).
  std::vector<std::string> anomaly_kinds;
};

/// Declares the export.* keys (defaults and help) in config.
void DeclareExportConfig(core::Config& config);

/// Reads export.* and the process.* keys the mapping depends on (units, windows_s). Start-up
/// boundary: a malformed value throws std::invalid_argument naming the key.
ExportOptions ExportOptionsFromConfig(const core::Config& config);

}  // namespace acmetrace::exporters

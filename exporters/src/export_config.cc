// export.* keys: one table (core::Settings) declares them, with their ExportOptions members, and drives
// `acmetrace config` and configs/acmetrace.yaml.
#include "acmetrace/exporters/export_config.h"

#include <algorithm>
#include <stdexcept>

#include "acmetrace/core/number.h"
#include "acmetrace/core/settings.h"
#include "acmetrace/http/http_server.h"

namespace acmetrace::exporters {

namespace {

// The export.* keys: each once, with the ExportOptions member it fills (default: the member's).
core::Settings<ExportOptions> ExportSettings() {
  using core::ConfigType;
  using O = ExportOptions;
  return core::Settings<O>("export")
      .Unbound("source", "stdin",
               ConfigType::Enum({"stdin", "kafka"}),
               "where `acmetrace export` reads records (acme.util, acme.metrics, acme.anomalies): a transport that "
               "reads (stdin: JSON lines)")
      .Text("listen", &O::listen, ConfigType::HostPort(),
            "HOST:PORT of /metrics (9400 is dcgm-exporter's port); port 0 picks a free one, printed on stdout")
      .Text("basic_auth_user", &O::basic_auth_user, ConfigType::String(),
            "HTTP basic auth user for /metrics and /targets; empty = no authentication. Basic auth sends the "
            "password in clear text: put TLS in front of the exporter")
      .Text("basic_auth_password", &O::basic_auth_password, ConfigType::String(),
            "HTTP basic auth password (with export.basic_auth_user)")
      .Int("http_threads", &O::http_threads, 1, 64, "HTTP worker threads (concurrent scrapes served at once)")
      .Int("render_cache_ms", &O::render_cache_ms, 0, 3'600'000,
           "scrapes of /metrics within this many ms of a rendering share it (concurrent scrapers cost one "
           "rendering; the state served is at most this old); 0 = render every scrape")
      .SecondsAsMs("series_ttl_s", &O::series_ttl_ms, 1,
                   "event (trace) time after which the series of a subject no longer seen are removed; the clock "
                   "is the newest event time of the series' cluster")
      .SecondsAsMs("anomaly_ttl_s", &O::anomaly_ttl_ms, 1,
                   "event time after which an open anomaly whose close never came is removed")
      .Int("max_series_per_metric", &O::max_series_per_metric, 1, 100'000'000,
           "cardinality cap per metric name; series beyond it are dropped and counted in "
           "acmetrace_series_dropped_total{metric}")
      .Text("model_name", &O::model_name, ConfigType::String(), "modelName label of the dcgm-exporter persona")
      .Text("hostname_label", &O::hostname_label, ConfigType::Enum({"Hostname", "hostname"}),
            "name of the persona's node label: Hostname (dcgm-exporter's default) or hostname")
      .Text("driver_version", &O::driver_version, ConfigType::NonEmptyString(),
            "DCGM_FI_DRIVER_VERSION label of the persona (synthetic: the release does not record it)")
      .Bool("gr_engine_active", &O::gr_engine_active,
            "also serve DCGM_FI_PROF_GR_ENGINE_ACTIVE, derived as GPU_UTIL / 100 (the release has no such "
            "field; NVIDIA's dashboard 12239 plots it as GPU Utilization)")
      .Double("ib_bytes_per_raw_unit", &O::ib_bytes_per_raw_unit, ConfigType::Double(0, 1e15, ConfigType::Bound::kOpen),
              "bytes per unit of the release's raw NODE_IB_SEND/RECEIVE (undocumented; assumed MB/s)")
      .PositiveSecondsAsMs("scrape_interval_s", &O::scrape_interval_ms,
                           "wall seconds between the scrapes of the slowest scraper (configs/prometheus scrapes "
                           "every 250 ms at speed 60; 15 s scrapers are common): a closed anomaly flag stays "
                           "exposed for two of them (value 1 until it was shown for two, then 0), so no flag falls "
                           "between scrapes")
      .Int("hour_window_s", &O::hour_window_s, 1, core::kMaxConfigSeconds,
           "the process.windows_s view the last-hour quantiles and failure ratio are taken from");
}

}  // namespace

void DeclareExportConfig(core::Config& config) { ExportSettings().Declare(config); }

ExportOptions ExportOptionsFromConfig(const core::Config& config) {
  ExportOptions o = ExportSettings().Fill(config);  // types and ranges; what follows checks across keys
  // The HTTP server's own parser: a bad address is a usage error (exit 2) before anything starts.
  if (const core::Result<http::ListenAddress> address = http::ParseListenAddress(o.listen); !address.ok()) {
    throw std::invalid_argument("export.listen: " + address.status().message());
  }
  if (o.basic_auth_user.empty() != o.basic_auth_password.empty()) {
    throw std::invalid_argument(config.Where(o.basic_auth_user.empty() ? "export.basic_auth_password"
                                                                        : "export.basic_auth_user") +
                                ": set export.basic_auth_user and export.basic_auth_password both or neither");
  }
  // Every declared detector kind (detect.<kind>.enabled): the one list lives in the processors'
  // registry, which the exporters do not link; the config carries it.
  for (const core::ConfigKey& key : config.keys()) {
    constexpr std::string_view kPrefix = "detect.", kSuffix = ".enabled";
    const std::string_view name = key.key;
    if (name.size() > kPrefix.size() + kSuffix.size() && name.starts_with(kPrefix) && name.ends_with(kSuffix)) {
      o.anomaly_kinds.emplace_back(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()));
    }
  }
  o.input_percent = config.GetString("process.units") == "percent";
  int64_t base = 0;
  for (const std::string& w : config.GetList("process.windows_s")) {
    std::optional<int64_t> v = core::ParseInteger(w);
    if (v && *v > 0 && (base == 0 || *v < base)) base = *v;
  }
  if (base > 0) o.base_window_s = base;
  return o;
}

}  // namespace acmetrace::exporters

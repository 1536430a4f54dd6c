// export.* keys: defaults and help live here and drive `acmetrace config` and configs/acmetrace.yaml.
#include "acmetrace/exporters/export_config.h"

#include <algorithm>
#include <stdexcept>

#include "acmetrace/core/number.h"
#include "acmetrace/http/http_server.h"

namespace acmetrace::exporters {

void DeclareExportConfig(core::Config& config) {
  using core::ConfigType;
  config.Declare("export.source", "stdin",
                 "where `acmetrace export` reads records (acme.util, acme.metrics, acme.anomalies): a transport that "
                 "reads (stdin: JSON lines)",
                 ConfigType::Enum({"stdin", "kafka"}));
  config.Declare("export.listen", "127.0.0.1:9400",
                 "HOST:PORT of /metrics (9400 is dcgm-exporter's port); port 0 picks a free one, printed on stdout",
                 ConfigType::HostPort());
  config.Declare("export.basic_auth_user", "",
                 "HTTP basic auth user for /metrics and /targets; empty = no authentication. Basic auth sends the "
                 "password in clear text: put TLS in front of the exporter",
                 ConfigType::String());
  config.Declare("export.basic_auth_password", "", "HTTP basic auth password (with export.basic_auth_user)",
                 ConfigType::String());
  config.Declare("export.http_threads", "4", "HTTP worker threads (concurrent scrapes served at once)",
                 ConfigType::Int(1, 64));
  config.Declare("export.render_cache_ms", "1000",
                 "scrapes of /metrics within this many ms of a rendering share it (concurrent scrapers cost one "
                 "rendering; the state served is at most this old); 0 = render every scrape",
                 ConfigType::Int(0, 3'600'000));
  config.Declare("export.series_ttl_s", "300",
                 "event (trace) time after which the series of a subject no longer seen are removed; the clock is "
                 "the newest event time of the series' cluster",
                 ConfigType::Int(1, core::kMaxConfigSeconds));
  config.Declare("export.anomaly_ttl_s", "86400",
                 "event time after which an open anomaly whose close never came is removed",
                 ConfigType::Int(1, core::kMaxConfigSeconds));
  config.Declare("export.max_series_per_metric", "20000",
                 "cardinality cap per metric name; series beyond it are dropped and counted in "
                 "acmetrace_series_dropped_total{metric}",
                 ConfigType::Int(1, 100'000'000));
  config.Declare("export.model_name", "NVIDIA A100-SXM4-80GB", "modelName label of the dcgm-exporter persona",
                 ConfigType::String());
  config.Declare("export.hostname_label", "Hostname",
                 "name of the persona's node label: Hostname (dcgm-exporter's default) or hostname",
                 ConfigType::Enum({"Hostname", "hostname"}));
  config.Declare("export.driver_version", "535.129.03",
                 "DCGM_FI_DRIVER_VERSION label of the persona (synthetic: the release does not record it)",
                 ConfigType::NonEmptyString());
  config.Declare("export.gr_engine_active", "false",
                 "also serve DCGM_FI_PROF_GR_ENGINE_ACTIVE, derived as GPU_UTIL / 100 (the release has no such "
                 "field; NVIDIA's dashboard 12239 plots it as GPU Utilization)",
                 ConfigType::Bool());
  config.Declare("export.ib_bytes_per_raw_unit", "1000000",
                 "bytes per unit of the release's raw NODE_IB_SEND/RECEIVE (undocumented; assumed MB/s)",
                 ConfigType::Double(0, 1e15, ConfigType::Bound::kOpen));
  config.Declare("export.scrape_interval_s", "15",
                 "wall seconds between the scrapes of the slowest scraper (configs/prometheus scrapes every 250 ms at "
                 "speed 60; 15 s scrapers are common): a closed anomaly flag stays exposed for two of them (value 1 "
                 "until it was shown for two, then 0), so no flag falls between scrapes",
                 ConfigType::PositiveSeconds());
  config.Declare("export.hour_window_s", "3600",
                 "the process.windows_s view the last-hour quantiles and failure ratio are taken from",
                 ConfigType::Int(1, core::kMaxConfigSeconds));
}

ExportOptions ExportOptionsFromConfig(const core::Config& config) {
  config.RequireValidSection("export");  // types and ranges; what follows checks across keys
  ExportOptions o;
  o.listen = config.GetString("export.listen");
  // The HTTP server's own parser: a bad address is a usage error (exit 2) before anything starts.
  if (const core::Result<http::ListenAddress> address = http::ParseListenAddress(o.listen); !address.ok()) {
    throw std::invalid_argument("export.listen: " + address.status().message());
  }
  o.basic_auth_user = config.GetString("export.basic_auth_user");
  o.basic_auth_password = config.GetString("export.basic_auth_password");
  if (o.basic_auth_user.empty() != o.basic_auth_password.empty()) {
    throw std::invalid_argument(config.Where(o.basic_auth_user.empty() ? "export.basic_auth_password"
                                                                        : "export.basic_auth_user") +
                                ": set export.basic_auth_user and export.basic_auth_password both or neither");
  }
  const int64_t threads = config.GetInt("export.http_threads");
  if (threads < 1 || threads > 64) throw std::invalid_argument("export.http_threads: must be in 1..64");
  o.http_threads = static_cast<int>(threads);
  o.render_cache_ms = config.GetInt("export.render_cache_ms");
  if (o.render_cache_ms < 0) throw std::invalid_argument("export.render_cache_ms: must be >= 0");
  o.series_ttl_ms = config.GetInt("export.series_ttl_s") * 1000;
  if (o.series_ttl_ms <= 0) throw std::invalid_argument("export.series_ttl_s: must be > 0");
  o.anomaly_ttl_ms = config.GetInt("export.anomaly_ttl_s") * 1000;
  if (o.anomaly_ttl_ms <= 0) throw std::invalid_argument("export.anomaly_ttl_s: must be > 0");
  o.max_series_per_metric = config.GetInt("export.max_series_per_metric");
  if (o.max_series_per_metric < 1) throw std::invalid_argument("export.max_series_per_metric: must be >= 1");
  o.model_name = config.GetString("export.model_name");
  o.hostname_label = config.GetString("export.hostname_label");
  if (o.hostname_label != "Hostname" && o.hostname_label != "hostname") {
    throw std::invalid_argument("export.hostname_label: expected Hostname or hostname, got '" + o.hostname_label + "'");
  }
  o.driver_version = config.GetString("export.driver_version");
  o.gr_engine_active = config.GetBool("export.gr_engine_active");
  o.ib_bytes_per_raw_unit = config.GetDouble("export.ib_bytes_per_raw_unit");
  if (!(o.ib_bytes_per_raw_unit > 0)) throw std::invalid_argument("export.ib_bytes_per_raw_unit: must be > 0");
  o.hour_window_s = config.GetInt("export.hour_window_s");
  o.scrape_interval_ms = static_cast<int64_t>(config.GetDouble("export.scrape_interval_s") * 1000.0);
  if (o.scrape_interval_ms <= 0) throw std::invalid_argument("export.scrape_interval_s: must be > 0");
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

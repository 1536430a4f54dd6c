// process.* keys: defaults and help live here and drive `acmetrace config` and configs/acmetrace.yaml.
#include "acmetrace/processors/process_config.h"

#include <algorithm>
#include <stdexcept>

#include "acmetrace/core/number.h"
#include "acmetrace/processors/quantile_sketch.h"

namespace acmetrace::processors {
namespace {

// One process.capacity_gpus item: cluster=N.
core::ConfigType CapacityType() {
  return core::ConfigType::Custom(
      "cluster=N with N >= 0",
      [](std::string_view v) -> std::optional<std::string> {
        const size_t eq = v.find('=');
        const std::optional<int64_t> n = eq == std::string_view::npos ? std::nullopt : core::ParseInteger(v.substr(eq + 1));
        if (eq == 0 || !n || *n < 0 || *n > 100'000'000) {
          return "expected cluster=N with N in [0, 100000000], got " + core::QuoteConfigValue(v);
        }
        return std::nullopt;
      },
      {"seren", "=5", "seren=-1", "seren=abc", "seren=100000001"}, {"seren=0", "kalos=2416", "x=100000000"});
}

}  // namespace

void DeclareProcessConfig(core::Config& config) {
  using core::ConfigType;
  config.Declare("process.source", "stdin", "where records come from: a transport that reads (stdin: JSON lines; docs/design.md \"Transports\")",
                 ConfigType::Enum({"stdin", "kafka"}));
  config.Declare("process.sink", "stdout", "where acme.metrics and acme.anomalies go: a transport that writes (stdout: JSON lines)",
                 ConfigType::Enum({"stdout", "kafka"}));
  config.Declare("process.allowed_lateness_ms", "60000",
                 "event-time lateness tolerated: the watermark is the lowest, over input partitions, of the highest "
                 "event time seen, minus this; records below it are late (counted, folded into the oldest open window)",
                 ConfigType::Int(0, core::kMaxConfigSeconds * 1000));
  config.Declare("process.evidence_timeout_ms", "300000",
                 "an open telemetry flag whose evidence (its node's samples, or its cluster's for cluster-wide kinds) "
                 "has been silent this long in event time closes there, and opens again if its detector still holds it "
                 "when the samples come back; the default is export.series_ttl_s, when a silent node's series leave "
                 "/metrics (docs/anomalies.md, \"Where the data ends\")",
                 ConfigType::Int(1, core::kMaxConfigSeconds * 1000));
  config.Declare("process.max_partition_lead_ms", "300000",
                 "how far one record or progress marker may move its input partition's event time on and be trusted "
                 "at once; beyond it, it holds nothing up until the partition's next item confirms it, and an earlier "
                 "next item makes it an input error (a forged marker or record: docs/kafka.md \"Trust\"). 0 = trust "
                 "every time",
                 ConfigType::Int(0, core::kMaxConfigSeconds * 1000));
  config.Declare("process.windows_s", "60,300,3600",
                 "window lengths: the smallest is the tumbling base window, the others rolling views over the last "
                 "base windows (multiples of it), all emitted when a base window closes",
                 ConfigType::List(ConfigType::Int(1, core::kMaxConfigSeconds), 1));
  config.Declare("process.capacity_gpus", "seren=2288,kalos=2416",
                 "GPUs per cluster (cluster=N,...) for gpus_total and gpu_allocation_ratio while the cluster has "
                 "shown no telemetry (then the GPUs seen in telemetry are the capacity); defaults are the published "
                 "sizes",
                 ConfigType::List(CapacityType()));
  config.Declare("process.quantile_accuracy", "0.01",
                 "relative error of the quantile sketches (job queue and run time, telemetry p50/p95)",
                 ConfigType::Double(QuantileSketch::kMinAccuracy, QuantileSketch::kMaxAccuracy,
                                    ConfigType::Bound::kClosed, ConfigType::Bound::kOpen));
  config.Declare("process.units", "raw",
                 "telemetry units of the input: raw (release files: *_ACTIVE, SM_OCCUPANCY, NODE_CPU/MEMORY_UTILIZATION "
                 "are fractions, reported x100 as percent) or percent (processed copies, reported as they are)",
                 ConfigType::Enum({"raw", "percent"}));
  config.Declare("process.clusters", "seren,kalos",
                 "clusters in ownership order: with several instances in a consumer group, cluster i belongs to the "
                 "holder of partition i of the ownership topic",
                 ConfigType::List(ConfigType::String(), 1));
  config.Declare("process.detectors", "true", "run the anomaly detectors (detect.*) and write acme.anomalies",
                 ConfigType::Bool());
  config.Declare("process.state_dir", "",
                 "directory of per-cluster state snapshots (with the input offsets they cover); a restarted or "
                 "rebalanced processor resumes from them. Shared by the instances of a group. Empty = none",
                 ConfigType::String());
  config.Declare("process.snapshot_interval_ms", "5000", "wall time between state snapshots (kafka source)",
                 ConfigType::Int(1, core::kMaxConfigSeconds * 1000));
  config.Declare("process.worker_thread", "true",
                 "apply closed windows (metrics, detectors, writing) on a second thread while the first reads and "
                 "parses records; the output is the same either way",
                 ConfigType::Bool());
  config.Declare("process.ownership_topic", "acme.process.owners",
                 "topic (one partition per process.clusters entry) whose consumer-group assignment decides which "
                 "instance owns which cluster",
                 ConfigType::NonEmptyString());
}

ProcessOptions ProcessOptionsFromConfig(const core::Config& config) {
  config.RequireValidSection("process");  // types and ranges; what follows checks across keys
  ProcessOptions o;
  // Types and ranges were checked by Config::Validate; what is left are checks across values.
  o.allowed_lateness_ms = config.GetInt("process.allowed_lateness_ms");
  o.evidence_timeout_ms = config.GetInt("process.evidence_timeout_ms");
  o.max_partition_lead_ms = config.GetInt("process.max_partition_lead_ms");
  o.windows_s.clear();
  for (const std::string& w : config.GetList("process.windows_s")) {
    std::optional<int64_t> v = core::ParseInteger(w);
    if (!v || *v <= 0) {
      throw std::invalid_argument(config.Where("process.windows_s") + ": not a positive number of seconds: " +
                                  core::QuoteConfigValue(w));
    }
    o.windows_s.push_back(*v);
  }
  if (o.windows_s.empty()) throw std::invalid_argument(config.Where("process.windows_s") + ": empty");
  std::sort(o.windows_s.begin(), o.windows_s.end());
  o.windows_s.erase(std::unique(o.windows_s.begin(), o.windows_s.end()), o.windows_s.end());
  for (int64_t w : o.windows_s) {
    if (w % o.windows_s.front() != 0) {
      throw std::invalid_argument(config.Where("process.windows_s") + ": " + std::to_string(w) +
                                  " is not a multiple of the base window " + std::to_string(o.windows_s.front()));
    }
  }
  o.capacity_gpus.clear();
  for (const std::string& item : config.GetList("process.capacity_gpus")) {
    const size_t eq = item.find('=');
    std::optional<int64_t> v = eq == std::string::npos ? std::nullopt : core::ParseInteger(item.substr(eq + 1));
    if (!v || *v < 0 || eq == 0) {
      throw std::invalid_argument(config.Where("process.capacity_gpus") + ": expected cluster=N, got " +
                                  core::QuoteConfigValue(item));
    }
    o.capacity_gpus[item.substr(0, eq)] = *v;
  }
  o.quantile_accuracy = config.GetDouble("process.quantile_accuracy");
  if (!(o.quantile_accuracy >= QuantileSketch::kMinAccuracy && o.quantile_accuracy < QuantileSketch::kMaxAccuracy)) {
    throw std::invalid_argument(config.Where("process.quantile_accuracy") + ": must be in [0.001, 0.5)");
  }
  const std::string units = config.GetString("process.units");
  if (units == "raw") {
    o.units = TelemetryUnits::kRaw;
  } else if (units == "percent") {
    o.units = TelemetryUnits::kPercent;
  } else {
    throw std::invalid_argument(config.Where("process.units") + ": expected raw or percent, got " +
                                core::QuoteConfigValue(units));
  }
  o.clusters = config.GetList("process.clusters");
  if (o.clusters.empty()) throw std::invalid_argument(config.Where("process.clusters") + ": empty");
  o.detectors = config.GetBool("process.detectors");
  o.state_dir = config.GetString("process.state_dir");
  o.snapshot_interval_ms = config.GetInt("process.snapshot_interval_ms");
  if (o.snapshot_interval_ms <= 0) {
    throw std::invalid_argument(config.Where("process.snapshot_interval_ms") + ": must be > 0");
  }
  o.ownership_topic = config.GetString("process.ownership_topic");
  o.worker_thread = config.GetBool("process.worker_thread");
  return o;
}

}  // namespace acmetrace::processors

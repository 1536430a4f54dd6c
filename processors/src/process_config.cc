// process.* keys: one table (core::Settings) declares them, with their ProcessOptions members, and drives
// `acmetrace config` and configs/acmetrace.yaml.
#include "acmetrace/processors/process_config.h"

#include <algorithm>
#include <stdexcept>

#include "acmetrace/core/number.h"
#include "acmetrace/core/settings.h"
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

// process.windows_s: the lengths, sorted, each a multiple of the smallest (the base window).
void FillWindows(const core::Config& config, const std::string& key, ProcessOptions& o) {
  o.windows_s.clear();
  for (const std::string& w : config.GetList(key)) o.windows_s.push_back(*core::ParseInteger(w));  // typed: Int(1, ...)
  std::sort(o.windows_s.begin(), o.windows_s.end());
  o.windows_s.erase(std::unique(o.windows_s.begin(), o.windows_s.end()), o.windows_s.end());
  for (int64_t w : o.windows_s) {
    if (w % o.windows_s.front() != 0) {
      throw std::invalid_argument(config.Where(key) + ": " + std::to_string(w) + " is not a multiple of the base window " +
                                  std::to_string(o.windows_s.front()));
    }
  }
}

// process.capacity_gpus: cluster=N items (typed: CapacityType).
void FillCapacity(const core::Config& config, const std::string& key, ProcessOptions& o) {
  o.capacity_gpus.clear();
  for (const std::string& item : config.GetList(key)) {
    const size_t eq = item.find('=');
    o.capacity_gpus[item.substr(0, eq)] = *core::ParseInteger(item.substr(eq + 1));
  }
}

// The struct's defaults as the keys' texts.
std::string WindowsText(const ProcessOptions& o) {
  std::string text;
  for (int64_t w : o.windows_s) text += (text.empty() ? "" : ",") + std::to_string(w);
  return text;
}
std::string CapacityText(const ProcessOptions& o) {
  std::string text;
  for (const auto& [cluster, gpus] : o.capacity_gpus) text += (text.empty() ? "" : ",") + cluster + "=" + std::to_string(gpus);
  return text;
}

// The process.* keys: each once, with the ProcessOptions member it fills (default: the member's).
const core::Settings<ProcessOptions>& ProcessSettings() {
  using core::ConfigType;
  using O = ProcessOptions;
  const int64_t max_ms = core::kMaxConfigSeconds * 1000;
  static const core::Settings<O> settings =
      core::Settings<O>("process")
          .Unbound("source", "stdin", ConfigType::Enum({"stdin", "kafka"}),
                   "where records come from: a transport that reads (stdin: JSON lines; docs/design.md \"Transports\")")
          .Unbound("sink", "stdout", ConfigType::Enum({"stdout", "kafka"}),
                   "where acme.metrics and acme.anomalies go: a transport that writes (stdout: JSON lines)")
          .Int("allowed_lateness_ms", &O::allowed_lateness_ms, 0, max_ms,
               "event-time lateness tolerated: the watermark is the lowest, over input partitions, of the highest "
               "event time seen, minus this; records below it are late (counted, folded into the oldest open window)")
          .Int("evidence_timeout_ms", &O::evidence_timeout_ms, 1, max_ms,
               "an open telemetry flag whose evidence (its node's samples, or its cluster's for cluster-wide kinds) "
               "has been silent this long in event time closes there, and opens again if its detector still holds it "
               "when the samples come back; the default is export.series_ttl_s, when a silent node's series leave "
               "/metrics (docs/anomalies.md, \"Where the data ends\")")
          .Int("max_partition_lead_ms", &O::max_partition_lead_ms, 0, max_ms,
               "how far one record or progress marker may move its input partition's event time on and be trusted "
               "at once; beyond it, it holds nothing up until the partition's next item confirms it, and an earlier "
               "next item makes it an input error (a forged marker or record: docs/kafka.md \"Trust\"). 0 = trust "
               "every time")
          .Custom("windows_s", WindowsText(O{}), ConfigType::List(ConfigType::Int(1, core::kMaxConfigSeconds), 1),
                  "window lengths: the smallest is the tumbling base window, the others rolling views over the last "
                  "base windows (multiples of it), all emitted when a base window closes",
                  FillWindows)
          .Custom("capacity_gpus", CapacityText(O{}), ConfigType::List(CapacityType()),
                  "GPUs per cluster (cluster=N,...) for gpus_total and gpu_allocation_ratio while the cluster has "
                  "shown no telemetry (then the GPUs seen in telemetry are the capacity); defaults are the published "
                  "sizes",
                  FillCapacity)
          .Double("quantile_accuracy", &O::quantile_accuracy,
                  ConfigType::Double(QuantileSketch::kMinAccuracy, QuantileSketch::kMaxAccuracy,
                                     ConfigType::Bound::kClosed, ConfigType::Bound::kOpen),
                  "relative error of the quantile sketches (job queue and run time, telemetry p50/p95)")
          .Choice("units", &O::units, {{"raw", TelemetryUnits::kRaw}, {"percent", TelemetryUnits::kPercent}},
                  "telemetry units of the input: raw (release files: *_ACTIVE, SM_OCCUPANCY, "
                  "NODE_CPU/MEMORY_UTILIZATION are fractions, reported x100 as percent) or percent (processed copies, "
                  "reported as they are)")
          .TextList("clusters", &O::clusters, ConfigType::List(ConfigType::String(), 1),
                    "clusters in ownership order: with several instances in a consumer group, cluster i belongs to "
                    "the holder of partition i of the ownership topic")
          .Bool("detectors", &O::detectors, "run the anomaly detectors (detect.*) and write acme.anomalies")
          .Text("state_dir", &O::state_dir, ConfigType::String(),
                "directory of per-cluster state snapshots (with the input offsets they cover); a restarted or "
                "rebalanced processor resumes from them. Shared by the instances of a group. Empty = none")
          .Int("snapshot_interval_ms", &O::snapshot_interval_ms, 1, max_ms,
               "wall time between state snapshots (kafka source)")
          .Bool("worker_thread", &O::worker_thread,
                "apply closed windows (metrics, detectors, writing) on a second thread while the first reads and "
                "parses records; the output is the same either way")
          .ConfigDefault("true")  // the struct's is off: unit tests drive the processor step by step
          .Text("ownership_topic", &O::ownership_topic, ConfigType::NonEmptyString(),
                "topic (one partition per process.clusters entry) whose consumer-group assignment decides which "
                "instance owns which cluster");
  return settings;
}

}  // namespace

void DeclareProcessConfig(core::Config& config) { ProcessSettings().Declare(config); }

ProcessOptions ProcessOptionsFromConfig(const core::Config& config) { return ProcessSettings().Fill(config); }

}  // namespace acmetrace::processors

// One scrape of every target of the exporter as the shipped configs/prometheus/prometheus.yml takes
// them: the exporter's own target (everything but the per-node persona), one target per node (its
// persona series), and the `up` Prometheus adds for each, as OpenMetrics sample lines at one time.
// `backfill` scrapes at trace times; `run`/`export --remote-write` at wall times.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/exporters/exporter.h"

namespace acmetrace::history {

/// The labels a scrape adds under the shipped configs/prometheus/prometheus.yml. Value type.
struct ScrapeTargets {
  std::string job = "acmetrace";               // the exporter's own target: everything but the persona
  std::string instance = "127.0.0.1:9400";
  std::string node_job = "acmetrace-gpu-nodes";  // one target per node (instance = the node)
};

/// Takes a scrape's per-target (persona) series one by one instead of as sample lines: the bulk of a
/// scrape, handed over as the store holds them (no text to render and parse back). Implementations
/// say whether they are thread-safe.
class TargetSampleSink {
 public:
  virtual ~TargetSampleSink() = default;
  /// One series at at_ms; target_labels are the node target's (job="...",instance="NODE"), the same
  /// text for every series of that node. An error ends the scrape.
  virtual core::Status TargetSample(int64_t at_ms, const exporters::SeriesStore::TargetSample& sample,
                                    std::string_view target_labels) = 0;
  /// The exporter's own target's samples at at_ms as its exposition has them (text format 0.0.4,
  /// "series value" lines, no timestamps), with that target's labels (the same on every call); adds
  /// their number to samples. Errors name the line, as AppendOpenMetricsSamples's do.
  virtual core::Status TargetExposition(int64_t at_ms, std::string_view exposition, std::string_view target_labels,
                                        int64_t& samples) = 0;
};

/// Scrapes an exporter's every target into sample lines; remembers the node targets it has seen
/// (their labels rendered once). Not thread-safe.
class TargetScrape {
 public:
  /// persona = false: the per-node targets are not scraped.
  TargetScrape(ScrapeTargets targets, bool persona);
  /// Replaces text with the samples of a scrape at at_ms (the exporter's view then, Tick included);
  /// own_exposition (text format: e.g. the process_* series) is served by the exporter's own target
  /// too. With a sink, the per-target series and the exporter's own target go to it (before this
  /// returns) instead of into text; text keeps the `up` samples.
  /// Returns the number of samples.
  core::Result<int64_t> Scrape(exporters::Exporter& exporter, int64_t at_ms, std::string& text,
                               std::string_view own_exposition = {}, TargetSampleSink* sink = nullptr);

 private:
  // A node's target: its target labels and `up`'s, rendered once; the last scrape it had series in.
  struct NodeTarget {
    std::string labels;     // job="acmetrace-gpu-nodes",instance="NODE"
    std::string up_labels;  // {cluster="CLUSTER"}
    int64_t scraped_at_ms = INT64_MIN;
  };
  NodeTarget& NodeTargetOf(std::string_view cluster, std::string_view node);

  ScrapeTargets targets_;
  bool persona_;
  const std::string cluster_target_;
  std::string cluster_view_;
  std::map<std::string, NodeTarget> node_targets_;  // "cluster/node" -> its target (sorted: `up` in node order)
  std::string key_;
  std::vector<NodeTarget*> node_of_serial_;  // a store series's node target, by its serial (nullptr: not yet)
};

}  // namespace acmetrace::history

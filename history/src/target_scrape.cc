#include "acmetrace/history/target_scrape.h"

#include "acmetrace/history/openmetrics.h"

namespace acmetrace::history {

TargetScrape::TargetScrape(ScrapeTargets targets, bool persona)
    : targets_(std::move(targets)),
      persona_(persona),
      cluster_target_(RenderTargetLabels(targets_.job, targets_.instance)) {}

core::Result<int64_t> TargetScrape::Scrape(exporters::Exporter& exporter, int64_t at, std::string& text,
                                           std::string_view own_exposition, TargetSampleSink* sink) {
  text.clear();
  int64_t samples = 0;
  core::Status sunk = core::Status::Ok();
  exporter.ScrapeEveryTarget(cluster_view_, [&](const exporters::SeriesStore::TargetSample& s) {
    if (!persona_ || !sunk.ok()) return;
    // A series's node never changes: looked up by name once, then by its serial.
    if (s.serial >= node_of_serial_.size()) node_of_serial_.resize(s.serial + 1, nullptr);
    NodeTarget*& cached = node_of_serial_[s.serial];
    if (cached == nullptr) cached = &NodeTargetOf(s.cluster, s.target);
    NodeTarget& node = *cached;
    node.scraped_at_ms = at;
    if (sink != nullptr) {
      sunk = sink->TargetSample(at, s, node.labels);
    } else {
      AppendOpenMetricsSample(text, s.family.name, s.labels_text, node.labels, s.value, at);
    }
    ++samples;
  });
  if (!sunk.ok()) return sunk;
  cluster_view_ += own_exposition;
  if (sink != nullptr) {
    if (core::Status s = sink->TargetExposition(at, cluster_view_, cluster_target_, samples); !s.ok()) return s;
  } else {
    const size_t before = text.size();
    if (core::Status s = AppendOpenMetricsSamples(text, cluster_view_, cluster_target_, at); !s.ok()) return s;
    for (size_t i = before; i < text.size(); ++i) samples += text[i] == '\n' ? 1 : 0;
  }
  // What Prometheus adds for every target it scraped.
  AppendOpenMetricsSample(text, "up", {}, cluster_target_, 1.0, at);
  ++samples;
  for (const auto& [key, node] : node_targets_) {
    if (node.scraped_at_ms != at) continue;  // not a target now: no series of it left
    AppendOpenMetricsSample(text, "up", node.up_labels, node.labels, 1.0, at);
    ++samples;
  }
  return samples;
}

TargetScrape::NodeTarget& TargetScrape::NodeTargetOf(std::string_view cluster, std::string_view node) {
  key_.assign(cluster);  // a scratch key: no allocation per sample once the node is known
  key_ += '/';
  key_ += node;
  auto it = node_targets_.find(key_);
  if (it == node_targets_.end()) {
    NodeTarget target;
    target.labels = RenderTargetLabels(targets_.node_job, node);
    target.up_labels = "{cluster=\"";
    exporters::AppendEscaped(target.up_labels, cluster, true);
    target.up_labels += "\"}";
    it = node_targets_.emplace(key_, std::move(target)).first;
  }
  return it->second;
}

}  // namespace acmetrace::history

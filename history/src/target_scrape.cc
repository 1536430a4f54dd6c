#include "acmetrace/history/target_scrape.h"

#include "acmetrace/history/openmetrics.h"

namespace acmetrace::history {

TargetScrape::TargetScrape(ScrapeTargets targets, bool persona)
    : targets_(std::move(targets)),
      persona_(persona),
      cluster_target_(RenderTargetLabels(targets_.job, targets_.instance)) {}

core::Result<int64_t> TargetScrape::Scrape(exporters::Exporter& exporter, int64_t at, std::string& text,
                                           std::string_view own_exposition) {
  text.clear();
  int64_t samples = 0;
  exporter.ScrapeEveryTarget(cluster_view_, [&](const exporters::SeriesStore::TargetSample& s) {
    if (!persona_) return;
    NodeTarget& node = NodeTargetOf(s.cluster, s.target);
    node.scraped_at_ms = at;
    AppendOpenMetricsSample(text, s.family.name, s.labels_text, node.labels, s.value, at);
    ++samples;
  });
  cluster_view_ += own_exposition;
  const size_t before = text.size();
  if (core::Status s = AppendOpenMetricsSamples(text, cluster_view_, cluster_target_, at); !s.ok()) return s;
  for (size_t i = before; i < text.size(); ++i) samples += text[i] == '\n' ? 1 : 0;
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

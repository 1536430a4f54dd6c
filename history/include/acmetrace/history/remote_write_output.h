// `backfill --remote-write URL`: the scrapes sent to a remote write receiver (VictoriaMetrics,
// Mimir, Thanos Receive, a Prometheus with --web.enable-remote-write-receiver), each sample at its
// trace time, instead of blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/history/backfill.h"
#include "acmetrace/history/openmetrics.h"
#include "acmetrace/remote_write/write_queue.h"

namespace acmetrace::history {

/// One sample line of the OpenMetrics text a scrape gives (name{labels} value [timestamp]): the
/// series text (name and labels as written, for identity), the labels (__name__ included, sorted
/// by name) and the value. Value type.
struct ParsedSample {
  std::string_view series;
  std::vector<remote_write::Label> labels;
  double value = 0;
};

/// The value after the series text (" value [timestamp]"): a number, NaN, +Inf or -Inf.
core::Status ParseSampleValue(std::string_view rest, double& value);

/// Parses one sample line (no line break). Errors say what is wrong; hostile text never crashes.
core::Status ParseOpenMetricsSample(std::string_view line, ParsedSample& out);

/// Feeds every sample of every scrape into a WriteQueue, at the scrape's time: through target_sink
/// (a backfill's, where nothing else waits on the store's lock while the queue is full) the
/// per-target series straight from the exporter's store and the exporter's own target from its
/// exposition, each series's labels parsed once; the rest from the scrape's text. Not
/// thread-safe (the queue's senders run on their own threads).
class RemoteWriteOutput : public ScrapeOutput, private TargetSampleSink {
 public:
  explicit RemoteWriteOutput(std::unique_ptr<remote_write::WriteQueue> queue) : queue_(std::move(queue)) {}
  core::Status Scrape(int64_t ts_ms, std::string_view samples) override;
  TargetSampleSink* target_sink() override { return this; }
  /// Hands the batches in the making to the senders (WriteQueue::Flush).
  core::Status Flush() { return queue_->Flush(); }
  /// Sends what is queued (retries included) and stops the senders.
  core::Status Finish() override;
  remote_write::QueueStats Stats() const { return queue_->Stats(); }
  std::vector<remote_write::RefusedSeries> Refused(size_t max) const { return queue_->Refused(max); }
  int64_t series() const { return static_cast<int64_t>(ids_.size()); }

 private:
  std::unique_ptr<remote_write::WriteQueue> queue_;
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  // series text -> the queue's id; looked up by string_view (no copy per sample)
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> ids_;
  ParsedSample scratch_;

  core::Status TargetSample(int64_t at_ms, const exporters::SeriesStore::TargetSample& sample,
                            std::string_view target_labels) override;
  core::Status TargetExposition(int64_t at_ms, std::string_view exposition, std::string_view target_labels,
                                int64_t& samples) override;
  // The queue's id of a sample line's series (a new series is parsed and added) and its value.
  core::Status LineSeries(std::string_view line, uint32_t& id, double& value);

  static constexpr uint32_t kNoId = UINT32_MAX;
  std::vector<uint32_t> id_of_serial_;  // a store series's queue id, by its serial (kNoId: not yet)
  std::string line_;  // a new series's sample line
  // The exporter's own target: an exposition line's series text -> the queue's id.
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> exposition_ids_;
  std::string exposition_target_;  // the target labels exposition_ids_ were made with
};

}  // namespace acmetrace::history

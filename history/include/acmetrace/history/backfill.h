// `acmetrace backfill`: the stages of `run` in one thread, in step with a simulated scraper. Each
// record goes through the replay's, the processors' and the exporter's own code; before the first
// record past a scrape time the exporter is scraped as the shipped Prometheus config scrapes it
// (the exporter's own target, and one target per node), and the samples are stamped with that
// trace time. What comes out is what a Prometheus scraping `run --speed 1` every step would have
// stored, without waiting the trace's months.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/status.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/history/subprocess.h"
#include "acmetrace/history/target_scrape.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/stream_processor.h"
#include "acmetrace/producers/event_stream.h"

namespace acmetrace::history {

/// Where the scrapes go: OpenMetrics sample lines, one scrape time at a time, times rising.
/// Implementations say whether they are thread-safe.
class ScrapeOutput {
 public:
  virtual ~ScrapeOutput() = default;
  /// Every sample of the scrape at ts_ms (whole lines, each ending in '\n').
  virtual core::Status Scrape(int64_t ts_ms, std::string_view samples) = 0;
  /// No scrape follows: ends the text (# EOF) and completes whatever the output makes of it.
  virtual core::Status Finish() = 0;
  /// Where the per-target series go instead of into Scrape's text (before the Scrape of their
  /// time), or nullptr: all in the text. One output serves the scrapes of one exporter (the sink may
  /// keep state by the store's series serials).
  virtual TargetSampleSink* target_sink() { return nullptr; }
};

/// What a backfill runs. Value type.
struct BackfillOptions {
  producers::EventStreamOptions stream;   // the data, clusters and --from/--to window
  processors::ProcessOptions process;
  processors::DetectorFactory detectors;  // empty = no detectors
  exporters::ExportOptions exporter;      // its scrape_interval_ms is set to step_ms
  int64_t step_ms = 15'000;               // the scrape interval
  /// No scrape before this (the default window's start, the telemetry's first sample): the records
  /// before it are still replayed, so the jobs submitted or running when it opens are known, as in
  /// `run`. INT64_MIN: from the first record.
  int64_t scrape_from_ms = INT64_MIN;
  /// The window's end is the input's (BackfillPlan::ends_with_data): the windows and flags still open
  /// close there, and a last scrape shows it. false: a cut (one slice of a longer backfill); the
  /// scrapes due before the window's end see what the whole backfill's would, and nothing is closed.
  bool close_at_end = true;
  ScrapeTargets targets;
  bool persona = true;                    // scrape the per-node targets (the dcgm-exporter persona)
  StopRequest* stop = nullptr;            // polled at every scrape: a requested stop ends the backfill
  /// Called after every scrape (progress; the caller decides how often to show it).
  std::function<void(const struct BackfillStats&)> on_scrape;
};

/// What a backfill did.
struct BackfillStats {
  int64_t records = 0;    // replayed
  int64_t scrapes = 0;
  int64_t samples = 0;
  int64_t first_scrape_ms = 0;
  int64_t last_scrape_ms = 0;
  processors::ProcessStats process;
};

/// Replays the window through processors and exporter and scrapes every step_ms of trace time:
/// the scrape at t sees every record with trace time <= t and what the processors made of them,
/// closed anomaly flags held for two steps as a live scraper would see them, series expired where
/// `run` expires them. Scrapes are at the multiples of step_ms from the first record on, and never
/// past the window (stream.range.to_ms, exclusive): after the scrape due at the last record the
/// processors close their open windows (the end of the input, as in `run`) and one more scrape, a
/// step later, shows them; when that step would leave the window, the windows close before the
/// last scrape instead. When the next multiple of step_ms is past the window's last second, the
/// last scrape is at that second (a step longer than the window still gives a scrape inside it).
/// Fails if the data cannot be opened, there is no record in the window, out fails, or stop is
/// requested (message "stopped").
core::Result<BackfillStats> RunBackfill(const BackfillOptions& options, core::InputErrors& errors, ScrapeOutput& out);

}  // namespace acmetrace::history

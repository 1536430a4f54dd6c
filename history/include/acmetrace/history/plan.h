// What a backfill will do, said before it starts (window, scrapes, samples, disk, time), and its
// progress by trace time while it runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "acmetrace/history/backfill.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/record_source.h"

namespace acmetrace::history {

/// Samples per second of a whole backfill (acmetrace, promtool, recording rules) on two cores, for
/// the estimate said at the start (bench/backfill_day.sh measures it).
inline constexpr double kEstimatedSamplesPerSecond = 200'000;
/// OpenMetrics bytes per sample (the persona's labels are long) and TSDB bytes per sample (with
/// room to spare), for the disk estimates.
inline constexpr int64_t kTextBytesPerSample = 280;
inline constexpr int64_t kBlockBytesPerSample = 4;

/// A backfill's window and what it will cost, estimated from the files' first and last rows and
/// their headers (no data read through). Value type.
struct BackfillPlan {
  producers::TimeRange window;          // --from/--to, the missing ends from the data
  bool from_data_start = false;         // window.from_ms is the data's start (not --from)
  bool to_data_end = false;             // window.to_ms is just after the data's end (not --to)
  /// The window ends where the data does (no --to, or a --to at or after it): the end of the window is
  /// the end of the input, and the backfill closes what is open there. A --to inside the data is a cut:
  /// a slice of a longer backfill, which closes nothing, so that slices add up to the whole.
  bool ends_with_data = true;
  bool telemetry = true;                // the data's span is the telemetry's (else the job traces')
  std::optional<int64_t> jobs_end_ms;   // the last time anywhere in the data (job ends), if later than the window
  int64_t step_ms = 15'000;
  int64_t scrapes = 0;
  int64_t samples_per_scrape = 0;
  int64_t samples = 0;
  int64_t text_bytes = 0;               // OpenMetrics text in all
  int64_t block_bytes = 0;              // the blocks, at most about
  double seconds = 0;                   // wall time, about
};

/// The window (range's given ends; the others the telemetry's span, its last row included, or the
/// job traces' without telemetry), the scrapes in it at step_ms, and the samples they hold: every
/// utilization file's data columns (one series per GPU or node and metric) under the persona, one
/// `up` per node, and the exporter's own series (about 350 per cluster, and the IPMI columns).
BackfillPlan PlanBackfill(const producers::DataDirFiles& files, const producers::TimeRange& range, int64_t step_ms,
                          bool persona);

/// "2023-07-01T16:00:00Z": the form --from/--to take.
std::string FormatFlagTime(int64_t ts_ms);

/// Where a backfill's samples go, for what the plan says about disk.
enum class PlanOutput { kBlocks, kText, kRemoteWrite };

/// The lines said at the start: the window and how to change it, the scrapes, the samples, the
/// temporary disk (blocks: at most temp_chunks chunks of chunk_bytes; text: the file; remote write:
/// none), the time.
void PrintPlan(std::FILE* out, const BackfillPlan& plan, const std::string& data_dir, int64_t temp_bytes,
               int64_t temp_chunks, int64_t chunk_bytes, PlanOutput output);

/// Progress by trace time with an ETA, as `replay` shows it: a line redrawn in place on a terminal
/// (every second), else a log line every 5 s. Reads the wall clock (steady). Not thread-safe.
class ProgressLine {
 public:
  ProgressLine(std::FILE* out, bool tty, const BackfillPlan& plan);
  /// After a scrape: shows the progress if the interval has passed.
  void Scraped(const BackfillStats& stats);
  /// Ends a redrawn line.
  void Done();

 private:
  std::FILE* out_;
  bool tty_;
  BackfillPlan plan_;
  std::chrono::steady_clock::time_point start_, next_;
  bool drawn_ = false;
};

}  // namespace acmetrace::history

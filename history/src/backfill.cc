#include "acmetrace/history/backfill.h"

#include <unordered_map>
#include <utility>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/time.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/history/openmetrics.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::history {
namespace {

// The last hop: records into the exporter.
class ExporterSink : public core::RecordSink {
 public:
  explicit ExporterSink(exporters::Exporter& exporter) : exporter_(exporter) {}
  core::Status Write(const core::Record& record) override {
    exporter_.Apply(record);
    return core::Status::Ok();
  }
  core::Status Flush() override { return core::Status::Ok(); }

 private:
  exporters::Exporter& exporter_;
};

// The replay's topics, as `run` routes them: everything to the processors, acme.util also to the
// exporter (the persona).
class StageFanout : public core::RecordSink {
 public:
  StageFanout(processors::StreamProcessor& processor, exporters::Exporter& exporter)
      : processor_(processor), exporter_(exporter) {}
  core::Status Write(const core::Record& record) override {
    if (core::TopicOf(record) == core::kTopicUtil) exporter_.Apply(record);
    core::Record copy = record;
    return processor_.Process(0, offset_++, std::move(copy));
  }
  core::Status Flush() override { return core::Status::Ok(); }

 private:
  processors::StreamProcessor& processor_;
  exporters::Exporter& exporter_;
  int64_t offset_ = 0;
};

// The simulated scraper: in front of the replay's output, it scrapes every scrape time a record is
// about to pass, and keeps the exporter's wall clock (closed-flag hold) at trace time, as at speed 1.
class Scraper : public core::RecordSink {
 public:
  Scraper(const BackfillOptions& options, exporters::Exporter& exporter, core::ManualClock& wall,
          pipeline::CountingTee& replay_out, pipeline::CountingTee& process_counts,
          ScrapeOutput& out, BackfillStats& stats)
      : options_(options),
        exporter_(exporter),
        wall_(wall),
        replay_out_(replay_out),
        process_counts_(process_counts),
        out_(out),
        stats_(stats),
        scrape_(options.targets, options.persona) {}

  core::Status Write(const core::Record& record) override {
    const int64_t ts = core::TimestampMsOf(record);
    if (!started_) {
      started_ = true;
      const int64_t step = options_.step_ms;
      const int64_t first = std::max(ts, options_.scrape_from_ms);
      next_scrape_ms_ = (first >= 0 ? (first + step - 1) / step : first / step) * step;
    }
    while (ts > next_scrape_ms_) {
      if (core::Status s = ScrapeAt(next_scrape_ms_); !s.ok()) return s;
    }
    MoveWall(ts);
    last_record_ms_ = std::max(last_record_ms_, ts);
    return replay_out_.Write(record);
  }
  core::Status Flush() override { return replay_out_.Flush(); }

  /// After the last record: the scrape due then, the end of the input (close_input), and a scrape
  /// that shows it, all at or before last_ms (the window's last millisecond).
  core::Status Finish(int64_t last_ms, const std::function<core::Status()>& close_input) {
    if (!started_) return close_input();
    if (!options_.close_at_end) {
      // A cut: every scrape due up to the window's end, as the whole backfill makes them before its
      // next record (which lies past the cut); nothing closes.
      while (next_scrape_ms_ <= last_ms) {
        if (core::Status s = ScrapeAt(next_scrape_ms_); !s.ok()) return s;
      }
      return core::Status::Ok();
    }
    const int64_t cap = last_ms >= 0 ? last_ms / 1000 * 1000 : (last_ms - 999) / 1000 * 1000;
    const int64_t due = std::min(next_scrape_ms_, cap);
    const bool room = stats_.scrapes == 0 || due > stats_.last_scrape_ms;
    if (room && due <= cap - options_.step_ms) {
      if (core::Status s = ScrapeAt(due); !s.ok()) return s;
      if (core::Status s = close_input(); !s.ok()) return s;
      return ScrapeAt(due + options_.step_ms);
    }
    if (core::Status s = close_input(); !s.ok()) return s;
    return room ? ScrapeAt(due) : core::Status::Ok();
  }

 private:
  int64_t last_record_ms_ = INT64_MIN;  // the newest record applied
  void MoveWall(int64_t ts_ms) {
    if (ts_ms > wall_.NowMs()) wall_.AdvanceMs(ts_ms - wall_.NowMs());
  }

  core::Status ScrapeAt(int64_t at) {
    if (options_.stop != nullptr && options_.stop->requested()) return core::Status::Error("stopped");
    next_scrape_ms_ = at + options_.step_ms;
    if (stats_.scrapes == 0) stats_.first_scrape_ms = at;
    MoveWall(at);
    // The records come in trace-time order: the telemetry has reached the last one, even when it
    // was a job event hours after the last util record (the persona goes as in `run`).
    if (last_record_ms_ != INT64_MIN) exporter_.NoteTelemetryReached(last_record_ms_);
    // Counts the tees hold back (they publish every 1024 records) reach the exporter first.
    if (core::Status s = replay_out_.Flush(); !s.ok()) return s;
    if (core::Status s = process_counts_.Flush(); !s.ok()) return s;
    core::Result<int64_t> samples = scrape_.Scrape(exporter_, at, text_, {}, out_.target_sink());
    if (!samples.ok()) return samples.status();
    ++stats_.scrapes;
    stats_.samples += samples.value();
    stats_.last_scrape_ms = at;
    core::Status written = out_.Scrape(at, text_);
    if (written.ok() && options_.on_scrape) options_.on_scrape(stats_);
    return written;
  }

  const BackfillOptions& options_;
  exporters::Exporter& exporter_;
  core::ManualClock& wall_;
  pipeline::CountingTee& replay_out_;  // the replay's output (counted), behind the scraper
  pipeline::CountingTee& process_counts_;
  ScrapeOutput& out_;
  BackfillStats& stats_;
  TargetScrape scrape_;
  bool started_ = false;
  int64_t next_scrape_ms_ = 0;
  std::string text_;
};

// The window (its scrapes' start, or the replay's) holds nothing to backfill.
core::Status NoRecordsInTheWindow(const BackfillOptions& options) {
  const int64_t from = options.scrape_from_ms != INT64_MIN ? options.scrape_from_ms : options.stream.range.from_ms;
  const int64_t to = options.stream.range.to_ms;
  return core::Status::Error("no records in the window (" + options.stream.data_dir + ", " +
                             (from == INT64_MIN ? std::string("start") : core::FormatIsoTime(from, 0)) + " .. " +
                             (to == INT64_MAX ? std::string("end") : core::FormatIsoTime(to, 0)) +
                             "): check --from/--to and --clusters against `acmetrace summary`");
}

}  // namespace

core::Result<BackfillStats> RunBackfill(const BackfillOptions& options, core::InputErrors& errors, ScrapeOutput& out) {
  if (options.step_ms <= 0) return core::Status::Error("step must be positive");
  // Scrapes from at or after the window's end: the records before it would be replayed for nothing.
  if (options.scrape_from_ms != INT64_MIN && options.stream.range.to_ms != INT64_MAX &&
      options.scrape_from_ms >= options.stream.range.to_ms) {
    return NoRecordsInTheWindow(options);
  }
  core::Result<std::unique_ptr<producers::EventStream>> opened = producers::EventStream::Open(options.stream, errors);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<producers::EventStream> stream = std::move(opened).value();

  BackfillStats stats;
  core::ManualClock wall(0);  // the exporter's wall clock: trace time, as at speed 1
  exporters::ExportOptions export_options = options.exporter;
  export_options.scrape_interval_ms = options.step_ms;
  exporters::Exporter exporter(export_options, &errors, &wall);
  exporter.SetReplayStatus(1.0, 0.0);

  ExporterSink to_exporter(exporter);
  pipeline::CountingTee process_out("process", exporter, /*note_trace_time=*/false, to_exporter);
  // Windows applied on this thread as they close: a scrape sees exactly what the records before it made.
  processors::ProcessOptions process_options = options.process;
  process_options.worker_thread = false;
  processors::StreamProcessor processor(process_options, process_out, options.detectors);
  processor.SetOwnAll(true);
  processor.DeclarePartition("backfill");
  StageFanout fanout(processor, exporter);
  // The replay's counting tee sits behind the scraper: a scrape at t counts the records up to t.
  pipeline::CountingTee replay_out("replay", exporter, /*note_trace_time=*/true, fanout);
  Scraper scraper(options, exporter, wall, replay_out, process_out, out, stats);

  core::ManualClock replay_clock(0);  // speed max never waits
  producers::ReplayOptions replay_options;
  replay_options.speed = 0;
  producers::Replayer replayer(*stream, scraper, replay_clock, errors, replay_options);
  core::Result<producers::ReplayStats> replayed = replayer.Run();
  if (!replayed.ok()) return replayed.status();
  stats.records = replayed.value().total;
  if (stats.records == 0) return NoRecordsInTheWindow(options);
  // The scrape due after the last record sees what a live run shows then; the windows still open
  // close at the end of the input (as in `run`), and the scrape after that shows them.
  const int64_t to = options.stream.range.to_ms;
  if (core::Status s = scraper.Finish(to == INT64_MAX ? INT64_MAX : to - 1,
                                      [&]() -> core::Status {
                                        if (core::Status f = processor.Finish(); !f.ok()) return f;
                                        if (core::Status f = replay_out.Flush(); !f.ok()) return f;
                                        return process_out.End(processor.owned());
                                      });
      !s.ok()) {
    return s;
  }
  stats.process = processor.stats();
  if (core::Status s = out.Finish(); !s.ok()) return s;
  return stats;
}

}  // namespace acmetrace::history

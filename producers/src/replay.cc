// Replayer: pacing against absolute deadlines (never accumulated sleeps), so there is no drift.
#include "acmetrace/producers/replay.h"

#include <cmath>

#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {

void DeclareReplayConfig(core::Config& config) {
  config.Declare("replay.speed", "max", "trace seconds replayed per wall second, or max (no pacing)");
  config.Declare("replay.sink", "stdout", "where records go: stdout (JSON lines) or null (count only)");
  config.Declare("replay.clusters", "", "clusters to replay, comma-separated (empty = all found)");
  config.Declare("replay.from", "", "first trace time replayed (unix seconds or ISO 8601 with offset; empty = start)");
  config.Declare("replay.to", "", "trace time where the replay stops, exclusive (empty = end)");
  config.Declare("replay.strict", "false", "stop with exit 1 at the first malformed row instead of skipping it");
  config.Declare("replay.job_reorder_window_s", "60",
                 "tolerance for job rows out of submit order; later ones are emitted late and counted");
  config.Declare("replay.progress_interval_s", "10", "seconds between progress log lines when not on a terminal");
  config.Declare("replay.max_error_lines", "1000", "input errors printed before the rest are only counted");
}

std::optional<double> ParseSpeed(std::string_view text) {
  if (text == "max") return 0.0;
  std::optional<double> v = core::ParseDouble(text);
  if (!v || !(*v > 0) || !std::isfinite(*v)) return std::nullopt;
  return v;
}

void Replayer::Progress(const ReplayStats& stats, int64_t now_ms, bool final) {
  if (options_.progress_out == nullptr) return;
  const int64_t elapsed = now_ms - wall0_ms_;
  const double rate = elapsed > 0 ? 1000.0 * static_cast<double>(stats.total) / static_cast<double>(elapsed) : 0.0;
  const int64_t total_bytes = source_.bytes_total();
  const double percent = total_bytes > 0 ? 100.0 * static_cast<double>(source_.bytes_read()) / static_cast<double>(total_bytes) : 0.0;
  const std::string trace_time = stats.total > 0 ? core::FormatIsoTime(stats.last_ts_ms, 0) : "-";
  if (options_.progress_tty) {
    std::fprintf(options_.progress_out, "\r\033[Kreplay: trace %s  %5.1f%%  %lld records  %.0f records/s%s",
                 trace_time.c_str(), percent, static_cast<long long>(stats.total), rate, final ? "\n" : "");
  } else {
    std::fprintf(options_.progress_out, "replay: trace %s %.1f%% %lld records %.0f records/s\n", trace_time.c_str(),
                 percent, static_cast<long long>(stats.total), rate);
  }
  std::fflush(options_.progress_out);
}

core::Result<ReplayStats> Replayer::Run() {
  ReplayStats stats;
  wall0_ms_ = clock_.NowMs();
  const int64_t interval = options_.progress_tty ? 250 : options_.progress_interval_ms;
  next_progress_ms_ = wall0_ms_ + interval;
  int64_t trace0_ms = 0;
  std::map<std::string_view, int64_t> per_topic;
  while (const core::Record* record = source_.Next()) {
    const int64_t ts = core::TimestampMsOf(*record);
    if (stats.total == 0) {
      trace0_ms = ts;
      stats.first_ts_ms = ts;
    }
    if (options_.speed > 0) {
      const int64_t due = wall0_ms_ + static_cast<int64_t>(std::llround(static_cast<double>(ts - trace0_ms) / options_.speed));
      if (due > clock_.NowMs()) clock_.SleepUntilMs(due);
    }
    if (core::Status s = sink_.Write(*record); !s.ok()) return s;
    ++per_topic[core::TopicOf(*record)];
    ++stats.total;
    stats.last_ts_ms = std::max(stats.last_ts_ms, ts);
    if (errors_.must_stop()) break;
    if (interval > 0 && (stats.total & 1023) == 0) {
      const int64_t now = clock_.NowMs();
      if (now >= next_progress_ms_) {
        Progress(stats, now, false);
        next_progress_ms_ = now + interval;
      }
    }
  }
  if (core::Status s = sink_.Flush(); !s.ok()) return s;
  if (core::Status s = source_.status(); !s.ok()) return s;
  for (const auto& [topic, n] : per_topic) stats.records[std::string(topic)] = n;
  stats.bytes_read = source_.bytes_read();
  stats.wall_ms = clock_.NowMs() - wall0_ms_;
  if (options_.progress_tty || interval > 0) Progress(stats, clock_.NowMs(), true);
  if (errors_.must_stop()) return core::Status::Error("stopped at the first bad row (--strict): " + errors_.first());
  return stats;
}

}  // namespace acmetrace::producers

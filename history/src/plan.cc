#include "acmetrace/history/plan.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "acmetrace/core/log.h"
#include "acmetrace/core/time.h"
#include "acmetrace/producers/data_span.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::history {
namespace {

int64_t FloorTo(int64_t v, int64_t m) { return (v >= 0 ? v / m : (v - m + 1) / m) * m; }
int64_t CeilTo(int64_t v, int64_t m) { return -FloorTo(-v, m); }

std::string Millions(int64_t n) {
  char buf[32];
  if (n >= 1'000'000) {
    std::snprintf(buf, sizeof(buf), "%.1f M", static_cast<double>(n) / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(n));
  }
  return buf;
}

std::string Megabytes(int64_t bytes) {
  char buf[32];
  if (bytes >= 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%.1f GB", static_cast<double>(bytes) / 1e9);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f MB", static_cast<double>(bytes) / 1e6);
  }
  return buf;
}

}  // namespace

std::string FormatFlagTime(int64_t ts_ms) {
  std::string t = core::FormatIsoTime(FloorTo(ts_ms, 1000), 0);  // "2023-07-01 16:00:00+00:00"
  if (t.size() > 10 && t[10] == ' ') t[10] = 'T';
  if (t.size() >= 6 && t.compare(t.size() - 6, 6, "+00:00") == 0) t.replace(t.size() - 6, 6, "Z");
  return t;
}

BackfillPlan PlanBackfill(const producers::DataDirFiles& files, const producers::TimeRange& range, int64_t step_ms,
                          bool persona) {
  BackfillPlan plan;
  plan.window = range;
  plan.step_ms = step_ms;
  const std::optional<producers::DataSpan> span = producers::EstimateDataSpan(files);
  if (span) {
    plan.telemetry = span->telemetry;
    if (range.from_ms == INT64_MIN) {
      plan.window.from_ms = span->first_ms;
      plan.from_data_start = true;
    }
    if (range.to_ms == INT64_MAX) {
      plan.window.to_ms = span->last_ms + 1;
      plan.to_data_end = true;
    }
    plan.ends_with_data = plan.window.to_ms > span->last_ms;
  }
  const std::optional<int64_t> last_anywhere = producers::EstimateLastTimeMs(files);
  if (last_anywhere && plan.window.to_ms != INT64_MAX && *last_anywhere >= plan.window.to_ms) {
    plan.jobs_end_ms = *last_anywhere;
  }
  if (plan.window.from_ms != INT64_MIN && plan.window.to_ms != INT64_MAX && plan.window.to_ms > plan.window.from_ms) {
    const int64_t first = CeilTo(plan.window.from_ms, step_ms);
    const int64_t last = FloorTo(plan.window.to_ms - 1, step_ms);
    plan.scrapes = last >= first ? (last - first) / step_ms + 1 : 1;  // a step past the window: one scrape
  }
  int64_t per_scrape = 0;
  for (const auto& [cluster, list] : files.utilization) {
    int64_t node_columns = 0;
    for (const std::string& path : list) {
      const int columns = producers::ReadCsvHead(path).columns;
      const int64_t data_columns = std::max(0, columns - 1);
      if (persona) per_scrape += data_columns;
      const std::string name = std::filesystem::path(path).filename().string();
      if (name.rfind("NODE_", 0) == 0) node_columns = std::max(node_columns, data_columns);
    }
    if (persona) per_scrape += node_columns;  // up, per node target
    per_scrape += 350;
  }
  for (const std::string& path : files.ipmi) per_scrape += std::max(0, producers::ReadCsvHead(path).columns - 1);
  plan.samples_per_scrape = per_scrape;
  plan.samples = per_scrape * plan.scrapes;
  plan.text_bytes = plan.samples * kTextBytesPerSample;
  plan.block_bytes = plan.samples * kBlockBytesPerSample;
  plan.seconds = static_cast<double>(plan.samples) / kEstimatedSamplesPerSecond;
  return plan;
}

void PrintPlan(std::FILE* out, const BackfillPlan& plan, const std::string& data_dir, int64_t temp_bytes,
               int64_t temp_chunks, int64_t chunk_bytes, PlanOutput output) {
  const producers::TimeRange& w = plan.window;
  const std::string from = w.from_ms == INT64_MIN ? "its start" : FormatFlagTime(w.from_ms);
  const std::string to = w.to_ms == INT64_MAX ? "its end" : FormatFlagTime(w.to_ms - 1);
  std::string why;
  if (plan.from_data_start && plan.to_data_end) {
    why = plan.telemetry ? " (the telemetry's span)" : " (the job trace's span: no telemetry)";
  } else if (plan.from_data_start || plan.to_data_end) {
    why = plan.telemetry ? " (--from/--to, the other end the telemetry's)" : " (--from/--to, the other end the job trace's)";
  }
  std::string widen;
  if (plan.jobs_end_ms) {
    widen = "; job events go on to " + FormatFlagTime(*plan.jobs_end_ms) + ": --to " +
            FormatFlagTime(CeilTo(*plan.jobs_end_ms + 1, 1000)) + " takes them in";
  } else {
    widen = "; --from/--to choose another window";
  }
  core::Logf(core::LogLevel::kInfo, "backfill", "%s from %s to %s%s%s", data_dir.c_str(), from.c_str(), to.c_str(),
             why.c_str(), widen.c_str());
  const double minutes = plan.seconds / 60.0;
  char time_text[64];
  if (minutes < 1.5) {
    std::snprintf(time_text, sizeof(time_text), "about %.0f s", plan.seconds);
  } else {
    std::snprintf(time_text, sizeof(time_text), "about %.0f min", minutes);
  }
  std::string disk;
  if (output == PlanOutput::kRemoteWrite) {
    disk = "no disk: every sample goes to the receiver";
  } else if (output == PlanOutput::kBlocks) {
    disk = "temporary disk at most " + Megabytes(temp_bytes) + " (" + std::to_string(temp_chunks) +
           " chunks of backfill.chunk_mb = " + std::to_string(chunk_bytes >> 20) +
           " MB at once, next to PROMDIR), blocks about " + Megabytes(plan.block_bytes);
  } else {
    disk = "about " + Megabytes(plan.text_bytes) + " of OpenMetrics text";
  }
  core::Logf(core::LogLevel::kInfo, "backfill",
             "%lld scrapes every %lld s, about %s samples (%lld a scrape), %s at %.0fk samples/s on 2 cores; %s",
             static_cast<long long>(plan.scrapes), static_cast<long long>(plan.step_ms / 1000),
             Millions(plan.samples).c_str(), static_cast<long long>(plan.samples_per_scrape), time_text,
             kEstimatedSamplesPerSecond / 1000, disk.c_str());
  (void)out;
}

ProgressLine::ProgressLine(std::FILE* out, bool tty, const BackfillPlan& plan)
    : out_(out), tty_(tty && core::CurrentLogFormat() == core::LogFormat::kText), plan_(plan) {
  start_ = std::chrono::steady_clock::now();
  next_ = start_ + std::chrono::seconds(tty_ ? 1 : 5);
}

void ProgressLine::Scraped(const BackfillStats& stats) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + std::chrono::seconds(tty_ ? 1 : 5);
  const int64_t elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count();
  std::optional<int64_t> last;
  if (plan_.window.to_ms != INT64_MAX) last = plan_.window.to_ms - 1;
  const int64_t first = plan_.window.from_ms != INT64_MIN ? plan_.window.from_ms : stats.first_scrape_ms;
  const producers::ReplayProgress p =
      producers::ComputeReplayProgress(first, last, stats.last_scrape_ms, 0, false, elapsed_ms);
  char percent[16] = "-";
  if (p.percent) std::snprintf(percent, sizeof(percent), "%.1f%%", *p.percent);
  const std::string eta = p.eta_ms ? producers::FormatDurationMs(*p.eta_ms) : "-";
  const double rate = elapsed_ms > 0 ? 1000.0 * static_cast<double>(stats.samples) / static_cast<double>(elapsed_ms) : 0;
  char line[256];
  std::snprintf(line, sizeof(line), "trace %s  %s  ETA %s  %lld samples  %.0f samples/s",
                FormatFlagTime(stats.last_scrape_ms).c_str(), percent, eta.c_str(),
                static_cast<long long>(stats.samples), rate);
  if (tty_) {
    std::fprintf(out_, "\r\033[Kbackfill: %s", line);
    std::fflush(out_);
    drawn_ = true;
  } else {
    core::LogTo(out_, core::LogLevel::kInfo, "backfill", line);
  }
}

void ProgressLine::Done() {
  if (drawn_) std::fputc('\n', out_);
  drawn_ = false;
}

}  // namespace acmetrace::history

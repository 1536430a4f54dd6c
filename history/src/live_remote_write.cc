#include "acmetrace/history/live_remote_write.h"

#include <chrono>

#include "acmetrace/exporters/process_metrics.h"
#include "acmetrace/remote_write/queue_metrics.h"

namespace acmetrace::history {

LiveRemoteWrite::LiveRemoteWrite(exporters::Exporter& exporter, std::unique_ptr<remote_write::WriteQueue> queue,
                                 LiveRemoteWriteOptions options, std::function<int64_t()> now_unix_ms)
    : exporter_(exporter),
      options_(std::move(options)),
      now_unix_ms_(std::move(now_unix_ms)),
      output_(std::move(queue)),
      scrape_(options_.targets, options_.persona) {
  exporter_.SetExtraSelfMetrics(
      [this](std::string& out) { remote_write::AppendQueueMetrics(out, output_.Stats(), options_.url); });
}

LiveRemoteWrite::~LiveRemoteWrite() {
  (void)Finish();
  exporter_.SetExtraSelfMetrics(nullptr);
}

void LiveRemoteWrite::Start() { thread_ = std::thread([this] { Loop(); }); }

core::Status LiveRemoteWrite::ScrapeNow() {
  const int64_t at = now_unix_ms_();
  // The process_* series the exporter's own target serves (this process's, read now).
  own_.clear();
  if (core::Result<exporters::ProcessStats> st = exporters::ReadProcessStats(); st.ok()) {
    exporters::AppendProcessMetrics(own_, st.value());
  }
  // As text, not through the output's target sink: the sink runs under the exporter's store lock,
  // and a queue waiting on a slow receiver must not stall /metrics and the records.
  core::Result<int64_t> samples = scrape_.Scrape(exporter_, at, text_, own_);
  if (!samples.ok()) return samples.status();
  if (core::Status s = output_.Scrape(at, text_); !s.ok()) return s;
  series_.store(output_.series());
  scrapes_.fetch_add(1);
  if (last_flush_ms_ == INT64_MIN) last_flush_ms_ = at;
  if (at - last_flush_ms_ >= options_.batch_send_deadline_ms) {
    last_flush_ms_ = at;
    return output_.Flush();
  }
  return core::Status::Ok();
}

void LiveRemoteWrite::Loop() {
  using Steady = std::chrono::steady_clock;
  const auto interval = std::chrono::milliseconds(options_.interval_ms);
  Steady::time_point next = Steady::now();
  while (true) {
    if (core::Status s = ScrapeNow(); !s.ok()) {
      failed_ = s;
      if (options_.on_failure) options_.on_failure(s);
      return;
    }
    next += interval;
    if (const Steady::time_point now = Steady::now(); next <= now) next += ((now - next) / interval + 1) * interval;
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_until(lock, next, [this] { return stopping_; })) return;
  }
}

core::Status LiveRemoteWrite::Finish() {
  if (finished_) return core::Status::Ok();
  finished_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  core::Status result = failed_;
  if (result.ok()) result = ScrapeNow();  // the final state: what --metrics-out writes
  core::Status closed = output_.Finish();
  return result.ok() ? closed : result;
}

}  // namespace acmetrace::history

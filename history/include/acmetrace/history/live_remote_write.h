// `run`/`export --remote-write URL`: what the exporter serves, sent as a Prometheus with the shipped
// config and a remote_write section would send it: an internal scrape of every target every
// interval of wall time, each sample stamped with that scrape's time, through the same queue as
// `backfill --remote-write`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "acmetrace/core/status.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/history/remote_write_output.h"
#include "acmetrace/history/target_scrape.h"
#include "acmetrace/remote_write/write_queue.h"

namespace acmetrace::history {

/// How the live writer scrapes. Value type.
struct LiveRemoteWriteOptions {
  int64_t interval_ms = 250;              // between two internal scrapes (the shipped scrape_interval)
  int64_t batch_send_deadline_ms = 5'000;  // a batch not full by then is sent anyway (Prometheus's default)
  ScrapeTargets targets;                  // instance: the address the exporter serves on
  bool persona = true;                    // the per-node targets too
  std::string url;                        // the receiver, for the url label of the queue's metrics
  /// Called once, on the scraping thread, when the writing fails (a request given up on); the
  /// scrapes stop, the exporter goes on serving.
  std::function<void(const core::Status&)> on_failure;
};

/// Scrapes the exporter on a thread of its own and queues the samples; adds the queue's
/// acmetrace_remote_storage_* metrics to the exporter's self metrics (its /metrics, and these
/// scrapes). Construct, Start and Finish from one thread; Stats from any. now_unix_ms stamps the
/// samples (the system clock; tests give their own).
class LiveRemoteWrite {
 public:
  LiveRemoteWrite(exporters::Exporter& exporter, std::unique_ptr<remote_write::WriteQueue> queue,
                  LiveRemoteWriteOptions options, std::function<int64_t()> now_unix_ms);
  /// Finish() if not called.
  ~LiveRemoteWrite();
  LiveRemoteWrite(const LiveRemoteWrite&) = delete;
  LiveRemoteWrite& operator=(const LiveRemoteWrite&) = delete;

  /// Starts the scrapes: the first at once, then every interval_ms (a scrape that overran skips
  /// the times it missed, as Prometheus does).
  void Start();
  /// One scrape now, on the caller's thread (Finish's last one; tests without the thread).
  core::Status ScrapeNow();
  /// Stops the scrapes, takes a last one (the final state), sends what is queued (retries
  /// included) and stops the senders. The first error: a failed scrape or a request given up on.
  core::Status Finish();

  remote_write::QueueStats Stats() const { return output_.Stats(); }
  std::vector<remote_write::RefusedSeries> Refused(size_t max) const { return output_.Refused(max); }
  int64_t series() const { return series_.load(); }
  int64_t scrapes() const { return scrapes_.load(); }

 private:
  void Loop();

  exporters::Exporter& exporter_;
  LiveRemoteWriteOptions options_;
  std::function<int64_t()> now_unix_ms_;
  RemoteWriteOutput output_;
  TargetScrape scrape_;
  std::string text_;
  std::string own_;  // process_* of this process, as its /metrics serves them
  int64_t last_flush_ms_ = INT64_MIN;
  std::atomic<int64_t> series_{0};
  std::atomic<int64_t> scrapes_{0};
  core::Status failed_ = core::Status::Ok();  // the thread's, read after it is joined
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace acmetrace::history

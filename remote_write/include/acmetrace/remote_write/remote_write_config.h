// The remote_write.* configuration keys (backfill, run and export --remote-write) and how they map
// onto RemoteWriteSettings.
#pragma once

#include <cstdint>

#include "acmetrace/core/config.h"
#include "acmetrace/core/status.h"
#include "acmetrace/remote_write/write_queue.h"

namespace acmetrace::remote_write {

/// Who sends: a live writer (run/export: a scrape every few hundred ms, a batch deadline) or a
/// backfill (history: many scrapes at once). They differ in the samples per request.
enum class WriteMode { kLive, kBackfill };

/// The remote_write.* keys, named after Prometheus's queue_config. Value type.
struct RemoteWriteSettings {
  int shards = QueueOptions{}.shards;
  int max_samples_per_send = QueueOptions{}.max_samples_per_send;  // run/export
  // backfill: history holds many samples of each series, so a request of many scrapes carries each
  // label set once for many samples (a request of max_samples_per_send holds about one per series).
  int backfill_max_samples_per_send = 500'000;
  int64_t max_bytes_per_send = QueueOptions{}.max_bytes_per_send;
  int capacity = QueueOptions{}.capacity_samples;
  int max_attempts = QueueOptions{}.max_attempts;
  int64_t min_backoff_ms = QueueOptions{}.min_backoff_ms;
  int64_t max_backoff_ms = QueueOptions{}.max_backoff_ms;
  int64_t timeout_ms = 30'000;  // of each request
  // run/export: the shipped prometheus.yml's scrape_interval (run's default speed 60), and
  // Prometheus's batch_send_deadline.
  int64_t scrape_interval_ms = 250;
  int64_t batch_send_deadline_ms = 5'000;
  bool operator==(const RemoteWriteSettings&) const = default;

  /// The samples per request of mode's command: max_samples_per_send or backfill_max_samples_per_send.
  int SamplesPerSend(WriteMode mode) const;
  /// The check across keys that depends on mode's command, one line naming the keys and their
  /// values: capacity at least the samples per request it uses (QueueOptions::Validate does the rest).
  core::Status Validate(WriteMode mode) const;
  /// The queue's numbers for mode's command (QueueOptions::Validate checks them too).
  QueueOptions Queue(WriteMode mode) const;
};

/// Declares the remote_write.* keys (defaults and help) in config.
void DeclareRemoteWriteConfig(core::Config& config);

/// The remote_write.* keys of a configuration. A malformed value throws std::invalid_argument naming
/// the key (a usage error at start-up).
RemoteWriteSettings RemoteWriteSettingsFromConfig(const core::Config& config);

}  // namespace acmetrace::remote_write

// The remote_write.* configuration keys (backfill, run and export --remote-write) and how they map
// onto RemoteWriteSettings.
#pragma once

#include <cstdint>

#include "acmetrace/core/config.h"
#include "acmetrace/remote_write/write_queue.h"

namespace acmetrace::remote_write {

/// The remote_write.* keys, named after Prometheus's queue_config. Value type.
struct RemoteWriteSettings {
  int shards = QueueOptions{}.shards;
  int max_samples_per_send = QueueOptions{}.max_samples_per_send;
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

  /// The queue's numbers (QueueOptions::Validate checks them across keys).
  QueueOptions Queue() const;
};

/// Declares the remote_write.* keys (defaults and help) in config.
void DeclareRemoteWriteConfig(core::Config& config);

/// The remote_write.* keys of a configuration. A malformed value throws std::invalid_argument naming
/// the key (a usage error at start-up).
RemoteWriteSettings RemoteWriteSettingsFromConfig(const core::Config& config);

}  // namespace acmetrace::remote_write

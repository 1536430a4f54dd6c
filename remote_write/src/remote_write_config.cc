// remote_write.* keys: one table (core::Settings) declares them with their RemoteWriteSettings members.
#include "acmetrace/remote_write/remote_write_config.h"

#include "acmetrace/core/settings.h"

namespace acmetrace::remote_write {

namespace {

const core::Settings<RemoteWriteSettings>& RemoteWriteSettingsTable() {
  using S = RemoteWriteSettings;
  static const core::Settings<S> settings =
      core::Settings<S>("remote_write")
          .Int("shards", &S::shards, 1, 256, "parallel senders; a series always goes through the same one (its order kept)")
          // Ten times Prometheus's live defaults: history has thousands of series per shard, and a
          // request of 2000 samples would carry every series's labels for two samples each.
          .Int("max_samples_per_send", &S::max_samples_per_send, 1, 1'000'000, "samples per remote write request at most")
          .Int("capacity", &S::capacity, 1, 100'000'000,
               "samples queued per shard ahead of its sender at most; past it the backfill waits (never drops)")
          .Int("max_attempts", &S::max_attempts, 1, 1'000,
               "attempts of a request answered 5xx or 429 or not answered, the first included; then the backfill "
               "fails")
          .Int("min_backoff_ms", &S::min_backoff_ms, 0, 3'600'000, "wait before the first retry, doubled at each next one")
          .Int("max_backoff_ms", &S::max_backoff_ms, 0, 3'600'000, "longest wait between two attempts")
          .SecondsAsMs("timeout_s", &S::timeout_ms, 1, 3'600, "timeout of each remote write request, seconds")
          .Int("scrape_interval_ms", &S::scrape_interval_ms, 10, 86'400'000,
               "run/export: wall milliseconds between two internal scrapes sent by remote write")
          .Int("batch_send_deadline_ms", &S::batch_send_deadline_ms, 0, 3'600'000,
               "run/export: a batch not full after this many milliseconds is sent anyway");
  return settings;
}

}  // namespace

QueueOptions RemoteWriteSettings::Queue() const {
  QueueOptions q;
  q.shards = shards;
  q.max_samples_per_send = max_samples_per_send;
  q.capacity_samples = capacity;
  q.max_attempts = max_attempts;
  q.min_backoff_ms = min_backoff_ms;
  q.max_backoff_ms = max_backoff_ms;
  return q;
}

void DeclareRemoteWriteConfig(core::Config& config) { RemoteWriteSettingsTable().Declare(config); }

RemoteWriteSettings RemoteWriteSettingsFromConfig(const core::Config& config) {
  return RemoteWriteSettingsTable().Fill(config);
}

}  // namespace acmetrace::remote_write

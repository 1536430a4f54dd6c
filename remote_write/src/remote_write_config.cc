// remote_write.* keys: one table (core::Settings) declares them with their RemoteWriteSettings members.
#include "acmetrace/remote_write/remote_write_config.h"

#include <string>

#include "acmetrace/core/settings.h"

namespace acmetrace::remote_write {

namespace {

const core::Settings<RemoteWriteSettings>& RemoteWriteSettingsTable() {
  using S = RemoteWriteSettings;
  static const core::Settings<S> settings =
      core::Settings<S>("remote_write")
          .Int("shards", &S::shards, 1, 256, "parallel senders; a series always goes through the same one (its order kept)")
          // Ten times Prometheus's live default: a live scrape is a sample per series, and a request
          // holds several of them within batch_send_deadline_ms.
          .Int("max_samples_per_send", &S::max_samples_per_send, 1, 1'000'000,
               "run/export: samples per remote write request at most")
          .Int("backfill_max_samples_per_send", &S::backfill_max_samples_per_send, 1, 10'000'000,
               "backfill: samples per remote write request at most; larger than max_samples_per_send (run/export) "
               "because history holds many samples of each series: a request of many scrapes carries each label set "
               "once for many samples")
          .Int("max_bytes_per_send", &S::max_bytes_per_send, 1024, int64_t{1} << 30,
               "bytes of a remote write request at most, uncompressed (the protobuf WriteRequest), every command; a "
               "batch goes early rather than pass it (receivers refuse larger requests: VictoriaMetrics's "
               "-maxInsertRequestSize is 32 MiB by default)")
          .Int("capacity", &S::capacity, 1, 100'000'000,
               "samples queued per shard ahead of its sender at most; past it the writer waits (never drops); at "
               "least the command's samples per request (max_samples_per_send, backfill_max_samples_per_send)")
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

int RemoteWriteSettings::SamplesPerSend(WriteMode mode) const {
  return mode == WriteMode::kBackfill ? backfill_max_samples_per_send : max_samples_per_send;
}

core::Status RemoteWriteSettings::Validate(WriteMode mode) const {
  if (capacity < SamplesPerSend(mode)) {
    // A shard's queue holds at least one whole request.
    const char* key = mode == WriteMode::kBackfill ? "backfill_max_samples_per_send" : "max_samples_per_send";
    return core::Status::Error("remote_write.capacity (" + std::to_string(capacity) +
                               ") must be at least remote_write." + key + " (" +
                               std::to_string(SamplesPerSend(mode)) + "), the samples of one request");
  }
  return core::Status::Ok();
}

QueueOptions RemoteWriteSettings::Queue(WriteMode mode) const {
  QueueOptions q;
  q.shards = shards;
  q.max_samples_per_send = SamplesPerSend(mode);
  q.max_bytes_per_send = max_bytes_per_send;
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

#include "acmetrace/remote_write/write_queue.h"

#include <algorithm>
#include <chrono>

namespace acmetrace::remote_write {
namespace {

// FNV-1a over the labels: a series lands in the same shard on every run.
uint64_t HashLabels(const std::vector<Label>& labels) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::string_view text) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0xff;  // a separator no label byte can fake into another split
    h *= 1099511628211ull;
  };
  for (const Label& label : labels) {
    mix(label.name);
    mix(label.value);
  }
  return h;
}

bool Retried(int status) { return status == 429 || status >= 500; }
// The statuses whose Retry-After says when to come back (RFC 9110: 503; RFC 6585: 429).
bool HonoursRetryAfter(int status) { return status == 429 || status == 503; }

}  // namespace

void RealSleeper::SleepMs(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

core::Status QueueOptions::Validate() const {
  auto bad = [](const std::string& what) { return core::Status::Error("remote write: " + what); };
  if (shards < 1 || shards > 256) return bad("shards: must be 1-256");
  if (max_samples_per_send < 1) return bad("max_samples_per_send: must be positive");
  if (max_bytes_per_send < 1) return bad("max_bytes_per_send: must be positive");
  if (capacity_samples < max_samples_per_send) return bad("capacity_samples: must be at least max_samples_per_send");
  if (max_attempts < 1) return bad("max_attempts: must be positive");
  if (min_backoff_ms < 0 || max_backoff_ms < min_backoff_ms) return bad("backoff: need 0 <= min_backoff_ms <= max_backoff_ms");
  return core::Status::Ok();
}

std::string BodyExcerpt(std::string_view body, size_t max_bytes) {
  std::string out;
  for (unsigned char c : body) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

WriteQueue::WriteQueue(QueueOptions options, const TransportFactory& make_transport, Sleeper& sleeper)
    : options_(options),
      // Within the bound a TimeSeries's body is at most max_bytes_per_send: its length's varint no
      // longer than that number's.
      series_framing_bytes_(1 + static_cast<int64_t>(VarintBytes(static_cast<uint64_t>(std::max<int64_t>(
                                    options.max_bytes_per_send, 0))))),
      sleeper_(sleeper) {
  for (int i = 0; i < options_.shards; ++i) {
    auto shard = std::make_unique<Shard>();
    shard->transport = make_transport();
    shards_.push_back(std::move(shard));
  }
  for (auto& shard : shards_) {
    Shard* s = shard.get();
    s->sender = std::thread([this, s] { SendLoop(*s); });
  }
}

WriteQueue::~WriteQueue() { (void)Close(); }

uint32_t WriteQueue::AddSeries(std::vector<Label> labels) {
  SeriesSlot slot;
  slot.shard = static_cast<uint32_t>(HashLabels(labels) % shards_.size());
  slots_.push_back(slot);
  SeriesEntry entry;
  entry.encoded = EncodeLabels(labels);
  entry.framed_bytes = series_framing_bytes_ + static_cast<int64_t>(entry.encoded.size());
  entry.labels = std::move(labels);
  series_.push_back(std::move(entry));
  return static_cast<uint32_t>(series_.size() - 1);
}

core::Status WriteQueue::FatalStatus() const {
  std::lock_guard<std::mutex> lock(report_mu_);
  return core::Status::Error(fatal_message_);
}

core::Status WriteQueue::Append(uint32_t series, Sample sample) {
  if (fatal_.load()) return FatalStatus();
  SeriesSlot& at = slots_[series];
  Shard& shard = *shards_[at.shard];
  // The request's size as the encoder will write it, at most: each sample's field at its largest
  // (an add, not its exact size: this runs per sample), and each series's labels and framing once,
  // when it is new in the batch.
  int64_t bytes = kMaxEncodedSampleBytes;
  if (at.slot < 0) bytes += series_[series].framed_bytes;
  if (shard.building.bytes + bytes > options_.max_bytes_per_send && shard.building.samples > 0) {
    // This sample would take the request past the byte bound: the batch goes as it is, and the
    // series starts the next one (its labels counted again there).
    if (at.slot >= 0) bytes += series_[series].framed_bytes;
    if (core::Status s = HandOver(shard); !s.ok()) return s;
  }
  Batch& batch = shard.building;
  batch.bytes += bytes;
  if (at.slot < 0) {
    if (batch.appended.empty()) {
      // As many as the shard's last batch held (fewer than max_samples_per_send when the byte bound
      // ended it): a queue of batches that each reserved a full one would hold many times the
      // memory of its samples.
      const size_t full = static_cast<size_t>(options_.max_samples_per_send);
      batch.appended.reserve(shard.last_batch_samples > 0 ? std::min(shard.last_batch_samples, full) : full);
    }
    at.slot = static_cast<int32_t>(batch.series.size());
    batch.series.push_back(&series_[series]);
    batch.ids.push_back(series);
    batch.counts.push_back(0);
  }
  ++batch.counts[static_cast<size_t>(at.slot)];
  batch.appended.push_back({static_cast<uint32_t>(at.slot), sample});
  ++batch.samples;
  // One producer: a plain store publishes the count (a locked add per sample stalls the producer).
  appended_.store(++appended_count_, std::memory_order_relaxed);
  if (shard.building.samples >= options_.max_samples_per_send) return HandOver(shard);
  return core::Status::Ok();
}

core::Status WriteQueue::HandOver(Shard& shard) {
  if (shard.building.samples == 0) return core::Status::Ok();
  for (uint32_t id : shard.building.ids) slots_[id].slot = -1;
  shard.last_batch_samples = shard.building.appended.size();
  Batch batch = std::move(shard.building);
  shard.building = Batch{};
  std::unique_lock<std::mutex> lock(shard.mu);
  // Backpressure: wait for the sender rather than grow (one batch is always let in).
  shard.changed.wait(lock, [&] {
    return fatal_.load() || shard.queued.empty() ||
           shard.queued_samples + batch.samples <= options_.capacity_samples;
  });
  if (fatal_.load()) {
    failed_.fetch_add(batch.samples);
    lock.unlock();
    return FatalStatus();
  }
  shard.queued_samples += batch.samples;
  shard.queued.push_back(std::move(batch));
  shard.changed.notify_all();
  return core::Status::Ok();
}

void WriteQueue::SendLoop(Shard& shard) {
  while (true) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(shard.mu);
      shard.changed.wait(lock, [&] { return !shard.queued.empty() || shard.closing; });
      if (shard.queued.empty()) return;
      batch = std::move(shard.queued.front());
      shard.queued.pop_front();
    }
    if (fatal_.load()) {
      failed_.fetch_add(batch.samples);  // given up with the write: counted, not sent
    } else {
      SendBatch(*shard.transport, batch);
    }
    {
      std::lock_guard<std::mutex> lock(shard.mu);
      shard.queued_samples -= batch.samples;
    }
    shard.changed.notify_all();
  }
}

void WriteQueue::SendBatch(WriteTransport& transport, const Batch& batch) {
  // The samples grouped per series, each series's in the order appended.
  std::vector<Sample> grouped(batch.appended.size());
  std::vector<EncodedSeries> series(batch.series.size());
  std::vector<size_t> next(batch.series.size());
  size_t at = 0;
  for (size_t i = 0; i < batch.series.size(); ++i) {
    next[i] = at;
    series[i] = {batch.series[i]->encoded, grouped.data() + at, batch.counts[i]};
    at += batch.counts[i];
  }
  for (const Batch::Appended& a : batch.appended) grouped[next[a.slot]++] = a.sample;
  const std::string body = EncodeWriteRequest(series);
  int64_t backoff_ms = options_.min_backoff_ms;
  for (int attempt = 1;; ++attempt) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    core::Result<HttpAnswer> answer = transport.Post(body);
    std::string why;
    if (!answer.ok()) {
      why = answer.status().message();
    } else if (answer.value().status / 100 == 2) {
      sent_.fetch_add(batch.samples);
      bytes_.fetch_add(static_cast<int64_t>(body.size()));
      return;
    } else if (!Retried(answer.value().status)) {
      NoteRefused(batch, answer.value());
      return;
    } else {
      why = "HTTP " + std::to_string(answer.value().status) + ": " + BodyExcerpt(answer.value().body);
    }
    if (attempt >= options_.max_attempts || fatal_.load()) {
      failed_.fetch_add(batch.samples);
      std::lock_guard<std::mutex> lock(report_mu_);
      if (!fatal_.exchange(true)) {
        fatal_message_ = "remote write: gave up on a request of " + std::to_string(batch.samples) + " samples after " +
                         std::to_string(attempt) + " attempts: " + why;
      }
      break;
    }
    retried_.fetch_add(batch.samples);
    // The receiver's own wait when it gives one (never longer than ours: a hostile or broken
    // Retry-After must not stall the write for hours), else the doubling backoff.
    const bool told = answer.ok() && HonoursRetryAfter(answer.value().status) && answer.value().retry_after_ms >= 0;
    sleeper_.SleepMs(told ? std::min(answer.value().retry_after_ms, options_.max_backoff_ms) : backoff_ms);
    backoff_ms = std::min(backoff_ms * 2, options_.max_backoff_ms);
  }
  // A request given up on: wake a producer waiting for room, it fails at once.
  for (auto& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard->mu);
    shard->changed.notify_all();
  }
}

void WriteQueue::NoteRefused(const Batch& batch, const HttpAnswer& answer) {
  failed_.fetch_add(batch.samples);
  std::lock_guard<std::mutex> lock(report_mu_);
  if (rejected_.fetch_add(1) == 0) {
    first_rejection_ = "HTTP " + std::to_string(answer.status) + ": " + BodyExcerpt(answer.body);
  }
  for (size_t i = 0; i < batch.ids.size(); ++i) {
    const uint32_t id = batch.ids[i];
    if (refused_.size() <= id) refused_.resize(id + 1);
    RefusedEntry& entry = refused_[id];
    if (entry.requests == 0) {
      ++series_refused_;
      entry.labels = &batch.series[i]->labels;
    }
    entry.samples += static_cast<int64_t>(batch.counts[i]);
    ++entry.requests;
  }
}

core::Status WriteQueue::Flush() {
  if (fatal_.load()) return FatalStatus();
  for (auto& shard : shards_) {
    if (core::Status s = HandOver(*shard); !s.ok()) return s;
  }
  return core::Status::Ok();
}

core::Status WriteQueue::Close() {
  if (closed_) return fatal_.load() ? FatalStatus() : core::Status::Ok();
  closed_ = true;
  core::Status handed = core::Status::Ok();
  for (auto& shard : shards_) {
    core::Status s = HandOver(*shard);
    if (!s.ok() && handed.ok()) handed = s;
  }
  for (auto& shard : shards_) {
    {
      std::lock_guard<std::mutex> lock(shard->mu);
      shard->closing = true;
    }
    shard->changed.notify_all();
  }
  for (auto& shard : shards_) {
    if (shard->sender.joinable()) shard->sender.join();
  }
  if (fatal_.load()) return FatalStatus();
  return handed;
}

QueueStats WriteQueue::Stats() const {
  QueueStats st;
  st.samples_sent = sent_.load();
  st.samples_failed = failed_.load();
  st.samples_retried = retried_.load();
  st.samples_pending = appended_.load() - st.samples_sent - st.samples_failed;
  st.requests = requests_.load();
  st.requests_rejected = rejected_.load();
  st.bytes_sent = bytes_.load();
  st.shards = static_cast<int64_t>(shards_.size());
  std::lock_guard<std::mutex> lock(report_mu_);
  st.first_rejection = first_rejection_;
  st.series_refused = series_refused_;
  return st;
}

std::vector<RefusedSeries> WriteQueue::Refused(size_t max) const {
  std::vector<const RefusedEntry*> entries;
  {
    std::lock_guard<std::mutex> lock(report_mu_);
    for (const RefusedEntry& e : refused_) {
      if (e.requests > 0) entries.push_back(&e);
    }
    std::stable_sort(entries.begin(), entries.end(),
                     [](const RefusedEntry* a, const RefusedEntry* b) { return a->requests > b->requests; });
    if (entries.size() > max) entries.resize(max);
    std::vector<RefusedSeries> out;
    for (const RefusedEntry* e : entries) out.push_back({*e->labels, e->samples, e->requests});
    return out;
  }
}

}  // namespace acmetrace::remote_write

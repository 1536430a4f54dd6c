// Samples to a remote write receiver as Prometheus's queue manager sends them: a few shards, each
// series always in the same shard (its order kept), batches of max_samples_per_send and at most
// max_bytes_per_send encoded, a bounded queue per shard that blocks the producer when full, retries
// with exponential backoff on 5xx, 429 and no answer (a 429's or 503's Retry-After honoured, up to
// the longest backoff), no retry on other statuses (counted and reported per series, never dropped
// silently).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/remote_write/write_request.h"

namespace acmetrace::remote_write {

/// A receiver's answer. Value type.
struct HttpAnswer {
  int status = 0;
  std::string body;
  int64_t retry_after_ms = -1;  // the Retry-After header as a wait, -1 without one
};

/// Sends one encoded request body. Each shard has its own: an instance is used by one thread.
class WriteTransport {
 public:
  virtual ~WriteTransport() = default;
  /// An error means no answer (refused, reset, timed out): retried as a 5xx is.
  virtual core::Result<HttpAnswer> Post(const std::string& body) = 0;
};

/// Waits between two attempts; tests record the waits instead. Thread-safe.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void SleepMs(int64_t ms) = 0;
};

/// std::this_thread::sleep_for. Thread-safe.
class RealSleeper : public Sleeper {
 public:
  void SleepMs(int64_t ms) override;
};

/// How the queue sends. Value type; names after Prometheus's queue_config. The batch size is the
/// live one (a scrape's samples, every few hundred ms); a backfill asks for larger batches
/// (RemoteWriteSettings::Queue).
struct QueueOptions {
  int shards = 4;                     // parallel senders
  int max_samples_per_send = 20'000;  // samples per request
  // A request's WriteRequest, uncompressed, at most (receivers refuse larger ones: VictoriaMetrics's
  // -maxInsertRequestSize, Mimir's -distributor.max-recv-msg-size); a batch goes early once the next
  // sample would pass it. A single series and sample larger than this alone goes alone.
  int64_t max_bytes_per_send = int64_t{16} << 20;
  int capacity_samples = 1'000'000;   // per shard, queued ahead of its sender; past it Append waits
  int max_attempts = 10;              // per request, the first included; then the write fails
  int64_t min_backoff_ms = 30;        // before the first retry, doubled at each next one
  int64_t max_backoff_ms = 5'000;
  /// Validates the numbers (one line naming the field).
  core::Status Validate() const;
};

/// A series with samples in requests the receiver refused. Value type.
struct RefusedSeries {
  std::vector<Label> labels;
  int64_t samples = 0;   // its samples in the refused requests
  int64_t requests = 0;  // the refused requests it was in
};

/// What the queue did, prometheus_remote_storage_* style. Value type.
struct QueueStats {
  int64_t samples_sent = 0;       // accepted by the receiver (2xx)
  int64_t samples_failed = 0;     // refused (4xx other than 429) or given up on
  int64_t samples_retried = 0;    // sent again after a 5xx, 429 or no answer
  int64_t samples_pending = 0;    // appended, not yet answered
  int64_t bytes_sent = 0;         // request bodies accepted (compressed, as on the wire)
  int64_t requests = 0;           // attempts, retries included
  int64_t requests_rejected = 0;  // answered with a status not retried (their samples are in failed)
  int64_t shards = 0;
  std::string first_rejection;    // "HTTP 400: <body excerpt>" of the first of them
  int64_t series_refused = 0;     // distinct series with samples in the refused requests
};

/// The shards and their senders. Append, AddSeries and Close from one producer thread; Stats from
/// any.
class WriteQueue {
 public:
  using TransportFactory = std::function<std::unique_ptr<WriteTransport>()>;
  /// Starts options.shards senders, each with a transport from make_transport.
  WriteQueue(QueueOptions options, const TransportFactory& make_transport, Sleeper& sleeper);
  /// Close() if not called: what is queued is still sent.
  ~WriteQueue();
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  /// A new series (labels as sent); returns its id for Append.
  uint32_t AddSeries(std::vector<Label> labels);
  /// Queues a sample of series (times rising per series). Waits while the series's shard is full;
  /// fails once a request was given up on (the message says which and why).
  core::Status Append(uint32_t series, Sample sample);
  /// Hands every shard's batch in the making to its sender now, full or not (a live writer's
  /// batch_send_deadline); waits as Append does when a shard is full.
  core::Status Flush();
  /// Sends what is queued and stops the senders; the error of a request given up on, if any.
  /// Refused requests are not an error here: see Stats().
  core::Status Close();
  QueueStats Stats() const;
  /// The series in refused requests, those in the most of them first (a receiver that refuses one
  /// series refuses every request holding it: that series leads), at most max. Thread-safe.
  std::vector<RefusedSeries> Refused(size_t max) const;

 private:
  struct SeriesEntry {
    std::vector<Label> labels;  // read by the senders: never changed once added
    std::string encoded;        // EncodeLabels(labels), the same in every request
    int64_t framed_bytes = 0;   // encoded and its TimeSeries's tag and length, at most
  };
  struct Batch {
    // The samples as appended: the producer writes one place after the other, and the sender
    // groups them per series (a vector per series written at every sample stalled the producer).
    struct Appended {
      uint32_t slot = 0;  // the series's index in series, ids and counts
      Sample sample;
    };
    std::vector<Appended> appended;
    std::vector<const SeriesEntry*> series;  // in series_ (never moved; labels never changed)
    std::vector<uint32_t> ids;               // the series' ids
    std::vector<uint32_t> counts;            // their samples
    int64_t samples = 0;
    int64_t bytes = 0;  // the request's WriteRequest before snappy: an upper bound, never below it
  };
  struct Shard {
    // Producer side.
    Batch building;
    size_t last_batch_samples = 0;  // what the next batch reserves: early batches reserve no more
    // Shared with the sender.
    std::mutex mu;
    std::condition_variable changed;
    std::deque<Batch> queued;
    int64_t queued_samples = 0;
    bool closing = false;
    std::unique_ptr<WriteTransport> transport;
    std::thread sender;
  };
  // What Append reads and writes per sample, by series id (the producer's alone).
  struct SeriesSlot {
    uint32_t shard = 0;
    int32_t slot = -1;  // its index in its shard's building batch, -1 when not there
  };

  core::Status HandOver(Shard& shard);
  void SendLoop(Shard& shard);
  void SendBatch(WriteTransport& transport, const Batch& batch);
  core::Status FatalStatus() const;
  void NoteRefused(const Batch& batch, const HttpAnswer& answer);

  QueueOptions options_;
  int64_t series_framing_bytes_ = 0;  // a TimeSeries's tag and length at most, in a request within the bound
  Sleeper& sleeper_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::deque<SeriesEntry> series_;  // push_back keeps references to the others valid
  std::vector<SeriesSlot> slots_;   // by series id
  bool closed_ = false;

  int64_t appended_count_ = 0;  // the producer's own count; appended_ publishes it
  std::atomic<int64_t> appended_{0};
  std::atomic<int64_t> sent_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> retried_{0};
  std::atomic<int64_t> bytes_{0};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> rejected_{0};
  std::atomic<bool> fatal_{false};  // a request was given up on: no more sends
  mutable std::mutex report_mu_;
  std::string first_rejection_;
  struct RefusedEntry {
    const std::vector<Label>* labels = nullptr;  // into series_ (never moved nor changed)
    int64_t samples = 0;
    int64_t requests = 0;
  };
  std::vector<RefusedEntry> refused_;  // by series id (guarded by report_mu_)
  int64_t series_refused_ = 0;
  std::string fatal_message_;
};

/// The body of an answer cut to one printable line of at most max_bytes (for messages).
std::string BodyExcerpt(std::string_view body, size_t max_bytes = 200);

}  // namespace acmetrace::remote_write

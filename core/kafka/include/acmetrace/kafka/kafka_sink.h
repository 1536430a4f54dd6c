// The Kafka producer behind core::RecordSink: idempotent, acks=all, backpressure instead of drops.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/transport.h"
#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/kafka/kafka_message.h"

namespace acmetrace::kafka {

/// What the producer did. Every produced record gets exactly one delivery report:
/// after a successful Flush, delivered == produced and failed == 0.
struct DeliveryCounts {
  int64_t produced = 0;          // accepted into the local queue (records and stream markers)
  int64_t markers = 0;           // of which stream markers (DeclareStream)
  int64_t delivered = 0;         // delivery reports: acknowledged by the broker (acks=all)
  int64_t failed = 0;            // delivery reports: given up (kafka.delivery_timeout_ms, fatal error)
  int64_t queue_full_waits = 0;  // times the local queue was full and Write waited (backpressure)
};

/// Produces records to Kafka (key {cluster}/..., value the record's JSON, trace_ts_ms header,
/// timestamp per kafka.timestamp). A full local queue makes Write wait, never drop; a fatal
/// producer error or a failed delivery makes Write/Flush return an error. Not thread-safe.
class KafkaSink : public core::RecordSink {
 public:
  /// Connects within kafka.connect_timeout_ms (else an error naming the brokers), creates the
  /// missing kafka.topics, and logs what it created to log.
  static core::Result<std::unique_ptr<KafkaSink>> Open(const KafkaSettings& settings, std::FILE* log = stderr);
  /// Flushes what is left (bounded by kafka.delivery_timeout_ms); a caller that cares about the
  /// outcome calls Flush first.
  ~KafkaSink() override;
  KafkaSink(const KafkaSink&) = delete;
  KafkaSink& operator=(const KafkaSink&) = delete;

  core::Status Write(const core::Record& record) override;
  /// Produces an already encoded message (processors' outputs: acme.metrics, acme.anomalies).
  core::Status Produce(const OutgoingMessage& message);
  /// Waits until every produced record has its delivery report; an error if any failed.
  core::Status Flush() override;
  /// Sends what linger.ms would hold back, waiting kSendBudgetMs at most (librdkafka sends at once
  /// only while a flush call lasts), not for the broker's acknowledgements; a fatal error so far.
  core::Status Send() override;
  /// The writer of a declared stream with progress markers (the replay) is about to start its
  /// schedule at first_trace_ts_ms: a progress marker at that time goes into every partition of the
  /// stream, and waits for their delivery. On a broker just started, or topics just created, that is
  /// when the producer gets its producer id and each partition's leader takes writes (hundreds of
  /// milliseconds), which would otherwise make the first records late.
  core::Status Prepare(int64_t first_trace_ts_ms) override;
  /// The writer waits for its next record's time, or is paused: a progress marker at trace_ts_ms
  /// (kPausedProgressMarker when paused) into every partition of a stream with progress markers,
  /// then sends them on their way; at most once per progress interval of trace time, and every 5 s
  /// of wall time while the trace time stands still. Readers see the writer alive (not idle) and time
  /// moving on. Nothing for a stream without progress markers.
  core::Status Heartbeat(int64_t trace_ts_ms, bool paused) override;
  /// Makes this sink the writer of a stream over topics (their partition counts are looked up):
  /// End() then puts an end marker into every partition of them, naming the clusters written. With
  /// progress_every_ms > 0 (for a writer whose records come in trace-time order: the replay), each
  /// time the records' trace time has moved on by that much, a progress marker at that time goes
  /// first into every partition that got no record in the last progress_every_ms (ProgressMarkers),
  /// so a reader knows a quiet partition has nothing earlier to come.
  core::Status DeclareStream(const std::vector<std::string>& topics, int64_t progress_every_ms);
  /// Flushes, writes the end markers of a declared stream and flushes them (else just Flush).
  core::Status End(const std::vector<std::string>& clusters) override;

  DeliveryCounts counts() const;
  /// counts() in words: "kafka: N records produced (and M stream markers), ...".
  std::string Report() const override;
  /// The configured topics: created now or found.
  const std::vector<TopicDescription>& topics() const;

  /// Tests only: raises a fatal producer error, as the idempotent producer would on a broken sequence.
  void TriggerFatalErrorForTesting(const std::string& reason);

 private:
  struct Impl;
  explicit KafkaSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace acmetrace::kafka

// The consumer side of the transport: framed records (topic, key, JSON value) from Kafka, with
// offsets stored only once the application has processed a record.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/kafka/kafka_message.h"

namespace acmetrace::kafka {

/// One record as it travels between stages: the stdio framing's topic, key and value, plus where
/// it came from. The views are valid until the source's next Next call.
struct FramedRecord {
  std::string_view topic;
  std::string_view key;
  std::string_view value;  // the record's JSON
  int32_t partition = -1;
  int64_t offset = -1;
  int64_t timestamp_ms = 0;          // the Kafka timestamp (replay time by default)
  int64_t trace_ts_ms = kNoTraceTs;  // the trace_ts_ms header, else the value's time (internal::TraceTimeOfMessage)
  std::string_view marker;           // the acmetrace_marker header: a stream marker, not a record
  std::string_view trace_ts_text;    // the trace_ts_ms header as it came, empty if absent
};

/// A pull source of framed records (Kafka here; a stdin source reads the same framing).
/// Implementations say whether they are thread-safe.
class FramedRecordSource {
 public:
  virtual ~FramedRecordSource() = default;
  /// The next record, or nullptr if none came within timeout_ms or the source is at_end().
  virtual core::Result<const FramedRecord*> Next(int timeout_ms) = 0;
  /// Marks the record from the last Next as processed: only processed records count as consumed
  /// (their offsets may be committed). Call before the next Next.
  virtual core::Status MarkProcessed(const FramedRecord& record) = 0;
  /// True when nothing more will come (only sources asked to stop at the end ever get there).
  virtual bool at_end() const = 0;
};

struct KafkaSourceOptions {
  std::vector<std::string> topics;
  /// at_end() once every assigned partition has been read to its end (tests, catch-up tools);
  /// otherwise the source follows the topics forever.
  bool stop_at_end = false;
};

/// A consumer-group member (kafka.group_id) reading topics. Offsets are stored only by
/// MarkProcessed and committed every kafka.commit_interval_ms and at Close, so a restart resumes
/// after the last processed record (at-least-once). Not thread-safe.
class KafkaSource : public FramedRecordSource {
 public:
  /// Connects within kafka.connect_timeout_ms (else an error naming the brokers) and subscribes.
  static core::Result<std::unique_ptr<KafkaSource>> Open(const KafkaSettings& settings, KafkaSourceOptions options,
                                                         std::FILE* log = stderr);
  /// Close()s if not yet closed.
  ~KafkaSource() override;
  KafkaSource(const KafkaSource&) = delete;
  KafkaSource& operator=(const KafkaSource&) = delete;

  core::Result<const FramedRecord*> Next(int timeout_ms) override;
  core::Status MarkProcessed(const FramedRecord& record) override;
  bool at_end() const override;

  /// Commits the processed offsets now (synchronously).
  core::Status Commit();
  /// Commits the processed offsets and leaves the group. Idempotent.
  core::Status Close();

  int64_t records() const;

 private:
  struct Impl;
  explicit KafkaSource(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace acmetrace::kafka

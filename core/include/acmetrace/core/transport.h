// The two small interfaces every stage writes and reads through (RecordSink, RecordInput), and
// their stdio and null implementations.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// Where records go. Implementations say whether they are thread-safe.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  /// Takes the record (the sink copies what it keeps: the reference is only valid for the call).
  virtual Status Write(const Record& record) = 0;
  /// Pushes out everything buffered, and waits until it has arrived where the sink can tell.
  virtual Status Flush() = 0;
  /// Sends everything buffered on its way without waiting for it to arrive: what a paced writer
  /// does before it waits for its next record's time (waiting for a broker's acknowledgements there
  /// would make the next records late). Flush, unless a sink can tell the two apart.
  virtual Status Send() { return Flush(); }
  /// Before a paced writer's schedule starts, with the trace time of its first record: makes the
  /// transport ready to deliver at once, so that the first records are not late for a connection,
  /// a producer id or a new topic's leader being set up. Nothing to do for most sinks.
  virtual Status Prepare(int64_t first_trace_ts_ms) {
    (void)first_trace_ts_ms;
    return Status::Ok();
  }
  /// The writer is alive and will write nothing before trace_ts_ms, though nothing is due yet:
  /// a paced writer waiting for its next record's time, or paused (paused true). Readers take it as
  /// time moving on (windows close and flags end in trace time without records) and as a sign of life
  /// (a partition that hears from its writer is not idle, so a pause is never taken for an end).
  /// Kafka writes a progress marker into every partition of its stream (flagged when paused), a
  /// queue a progress item; stdio and null sinks have no reader to tell.
  virtual Status Heartbeat(int64_t trace_ts_ms, bool paused) {
    (void)trace_ts_ms;
    (void)paused;
    return Status::Ok();
  }
  /// The writer has written its last record: flushes, and tells the readers that its stream ended
  /// (an in-process queue closes its writer; Kafka writes an end marker into every partition of its
  /// stream topics, naming clusters: those the writer answers for, or if empty those it wrote).
  /// Stdio and null sinks just flush: their reader sees the end of the file.
  virtual Status End(const std::vector<std::string>& clusters) {
    (void)clusters;
    return Flush();
  }
  /// What the sink did, in words for the writer's last log line (Kafka: records produced, delivery
  /// reports, queue-full waits); "" when it has nothing to tell.
  virtual std::string Report() const { return ""; }
};

/// One input partition: a stable name (the processors' snapshots key offsets by it: "stdin",
/// "in-process", "acme.util/3"), its topic ("" when a partition carries every topic), where an
/// error message says a bad record was ("stdin", "acme.util[3]"), and its number within its topic
/// (-1 when the transport has none).
struct InputPartition {
  std::string name;
  std::string topic;
  std::string where;
  int32_t number = -1;
};

/// What RecordInput::Next yields. Views and the record pointer are valid until the next Next.
struct InputItem {
  enum class Kind {
    kNothing,     // nothing came within the timeout
    kRecord,      // a record, parsed already (`record`; the reader may move from it)
    kFramed,      // a record in its framing: `line` (stdio) or `topic`, `key`, `value` (Kafka)
    kUnreadable,  // a record that cannot be read (`error`, e.g. a line over the length limit)
    kProgress,    // the partition's writer will write nothing before ts_ms any more (a marker)
    kCaughtUp,    // the partition is read to its current end; its writer may still write more
    kIdle,        // the partition delivered nothing for the input's idleness timeout
    kEnded,       // the partition's writer ended its stream (`clusters`: those it wrote, "" = all)
  };
  static constexpr int64_t kNoTs = INT64_MIN;
  Kind kind = Kind::kNothing;
  int partition = -1;     // index into RecordInput::partitions()
  int64_t offset = -1;    // Kafka offset; -1 if none
  int64_t line_no = -1;   // stdio: the line's number (for messages)
  int64_t ts_ms = kNoTs;  // its trace time, if known without parsing (kProgress: the bound)
  Record* record = nullptr;
  std::string_view line;
  std::string_view topic;
  std::string_view key;
  std::string_view value;
  std::string_view cluster;  // kFramed, kUnreadable: its cluster when the transport knows it unparsed ("" if not)
  std::string_view error;
  std::string_view clusters;
  bool paused = false;    // kProgress: the writer said it is paused (a heartbeat of a paused replay)
};

/// Where records come from: the read-side twin of RecordSink. Next yields records with their
/// partition, offset and time, and what is known about each partition (caught up, idle, ended, a
/// writer's progress); parsing, lateness and ownership are the reading stage's (pipeline/'s stage
/// runners). Implementations say whether they are thread-safe.
class RecordInput {
 public:
  virtual ~RecordInput() = default;
  /// Every partition this input reads, fixed once it is open.
  virtual const std::vector<InputPartition>& partitions() const = 0;
  /// The next item within timeout_ms (kNothing if none came). An error is the input's failure
  /// (a read error, a fatal client error), not a bad record.
  virtual Result<InputItem> Next(int timeout_ms) = 0;
  /// Reads each partition again from next_offsets[p] (-1: its beginning). Only inputs with
  /// offsets (Kafka) can seek.
  virtual Status Seek(const std::vector<int64_t>& next_offsets) {
    (void)next_offsets;
    return Status::Error("this input cannot seek");
  }
  /// Stops reading partition p (a bounded run reached where it stops).
  virtual Status Pause(int partition) {
    (void)partition;
    return Status::Ok();
  }
  /// Ends a blocking Next early, from any thread (inputs that block on a queue).
  virtual void Cancel() {}
};

/// JSON lines with the stdio framing ({"topic":..,"key":..,"value":..}) to a FILE*, buffered in
/// 1 MiB blocks. Not thread-safe.
class StdioSink : public RecordSink {
 public:
  explicit StdioSink(std::FILE* out) : out_(out) { buffer_.reserve(kBufferBytes + 64 * 1024); }
  ~StdioSink() override { (void)Flush(); }
  Status Write(const Record& record) override;
  Status Flush() override;

 private:
  static constexpr size_t kBufferBytes = 1 << 20;
  std::FILE* out_;
  std::string buffer_;
};

/// Framed JSON lines (the stdio transport) from a FILE*, one partition named after the file. Lines
/// come as kFramed (the reader parses them), an over-long line as kUnreadable, and the end of the
/// file as kEnded. Not thread-safe.
class StdioInput : public RecordInput {
 public:
  StdioInput(std::FILE* in, std::string name);
  ~StdioInput() override;
  const std::vector<InputPartition>& partitions() const override { return partitions_; }
  Result<InputItem> Next(int timeout_ms) override;

 private:
  struct Lines;
  std::vector<InputPartition> partitions_;
  std::unique_ptr<Lines> lines_;
  std::string error_;
  bool ended_ = false;
};

/// Discards records and counts them per topic (for benchmarks). Not thread-safe.
class NullSink : public RecordSink {
 public:
  Status Write(const Record& record) override {
    ++per_kind_[record.index()];  // an array, not a map by topic: this sink is the reader benchmarks' baseline
    return Status::Ok();
  }
  Status Flush() override { return Status::Ok(); }
  /// Records written, per topic that had any.
  std::map<std::string_view, int64_t> counts() const {
    std::map<std::string_view, int64_t> counts;
    for (size_t kind = 0; kind < per_kind_.size(); ++kind) {
      if (per_kind_[kind] > 0) counts[kTopicOfKind[kind]] = per_kind_[kind];
    }
    return counts;
  }

 private:
  std::array<int64_t, std::variant_size_v<Record>> per_kind_{};
};

}  // namespace acmetrace::core

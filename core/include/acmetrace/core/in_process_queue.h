// The in-process transport: a bounded queue of records between two stages of one process
// (`acmetrace run`'s embedded default), with backpressure instead of loss.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/core/transport.h"

namespace acmetrace::core {

/// A bounded FIFO of records: Write blocks while the queue is full (backpressure, never drops);
/// the reader takes batches. Ends when every writer has called CloseWriter (the reader drains
/// what is left, then Pop returns false), or at once on Cancel. Thread-safe: any number of
/// writers, one reader.
class InProcessQueue : public RecordSink {
 public:
  /// capacity: records held at most (memory bound); writers: how many CloseWriter calls end it.
  explicit InProcessQueue(size_t capacity, int writers = 1);

  /// Copies the record in; blocks while full. Fails after Cancel.
  Status Write(const Record& record) override;
  Status Flush() override { return Status::Ok(); }
  /// A progress item after the records written so far (QueueInput yields it as kProgress). Items
  /// with no record between them keep only the newest, so heartbeats never fill the queue.
  Status Heartbeat(int64_t trace_ts_ms, bool paused) override;
  /// This writer's last record: CloseWriter.
  Status End(const std::vector<std::string>&) override {
    CloseWriter();
    return Status::Ok();
  }

  /// One more writer (before the reader can see every writer closed).
  void AddWriter();
  /// One writer is done.
  void CloseWriter();
  /// Stops everything: blocked writers fail, Pop returns false.
  void Cancel();

  /// Moves up to max records into out (cleared first); blocks until there is one, or the queue
  /// has ended. Returns false once ended and drained (or cancelled). A batch stops before a
  /// progress item; when one is first, out stays empty and *progress gets it (if given; else it is
  /// dropped).
  struct ProgressItem {
    int64_t trace_ts_ms = 0;
    bool paused = false;
  };
  bool Pop(std::vector<Record>& out, size_t max, ProgressItem* progress = nullptr);

  size_t size() const;
  bool cancelled() const;
  /// How many times a writer had to wait for room (how often backpressure acted).
  int64_t full_waits() const;

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<Record> records_;
  // Progress items by position: how many records were pushed before each.
  std::deque<std::pair<uint64_t, ProgressItem>> progress_;
  uint64_t pushed_ = 0;
  uint64_t popped_ = 0;
  int open_writers_;
  bool cancelled_ = false;
  int64_t full_waits_ = 0;
};

/// The reading end of an InProcessQueue as a RecordInput: one partition (the queue keeps its
/// writers' order), parsed records, kEnded once every writer closed. Next blocks until a record or
/// the end (Cancel ends it). Not thread-safe (one reader).
class QueueInput : public RecordInput {
 public:
  QueueInput(InProcessQueue& queue, std::string name, size_t batch = 256);
  const std::vector<InputPartition>& partitions() const override { return partitions_; }
  Result<InputItem> Next(int timeout_ms) override;
  void Cancel() override { queue_.Cancel(); }

 private:
  InProcessQueue& queue_;
  std::vector<InputPartition> partitions_;
  size_t batch_size_;
  std::vector<Record> batch_;
  size_t next_ = 0;
  bool ended_ = false;
  InProcessQueue::ProgressItem progress_;
};

}  // namespace acmetrace::core

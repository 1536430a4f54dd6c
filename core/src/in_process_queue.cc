// InProcessQueue: a mutex and two condition variables around a deque.
#include "acmetrace/core/in_process_queue.h"

#include "acmetrace/core/locked.h"

namespace acmetrace::core {

InProcessQueue::InProcessQueue(size_t capacity, int writers)
    : capacity_(capacity == 0 ? 1 : capacity), open_writers_(writers) {}

Status InProcessQueue::Write(const Record& record) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (records_.size() >= capacity_ && !cancelled_) {
    ++full_waits_;
    not_full_.wait(lock, [this] { return records_.size() < capacity_ || cancelled_; });
  }
  if (cancelled_) return Status::Error("in-process queue: cancelled");
  const bool was_empty = records_.empty() && progress_.empty();
  records_.push_back(record);
  ++pushed_;
  lock.unlock();
  if (was_empty) not_empty_.notify_one();
  return Status::Ok();
}

Status InProcessQueue::Heartbeat(int64_t trace_ts_ms, bool paused) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (cancelled_) return Status::Error("in-process queue: cancelled");
  const bool was_empty = records_.empty() && progress_.empty();
  if (!progress_.empty() && progress_.back().first == pushed_) {
    progress_.back().second = ProgressItem{trace_ts_ms, paused};  // nothing between: the newest says it all
  } else {
    progress_.emplace_back(pushed_, ProgressItem{trace_ts_ms, paused});
  }
  lock.unlock();
  if (was_empty) not_empty_.notify_one();
  return Status::Ok();
}

void InProcessQueue::AddWriter() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++open_writers_;
}

void InProcessQueue::CloseWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (open_writers_ > 0) --open_writers_;
  }
  not_empty_.notify_all();
}

void InProcessQueue::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
  }
  not_full_.notify_all();
  not_empty_.notify_all();
}

bool InProcessQueue::Pop(std::vector<Record>& out, size_t max, ProgressItem* progress) {
  out.clear();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    not_empty_.wait(lock, [this] { return !records_.empty() || !progress_.empty() || open_writers_ == 0 || cancelled_; });
    if (cancelled_) return false;
    if (!progress_.empty() && progress_.front().first == popped_) {
      const ProgressItem item = progress_.front().second;
      progress_.pop_front();
      if (progress != nullptr) {
        *progress = item;
        return true;
      }
      continue;  // a reader that does not take progress items
    }
    if (records_.empty()) {
      if (open_writers_ == 0) return false;  // every writer closed and drained
      continue;
    }
    break;
  }
  const bool was_full = records_.size() >= capacity_;
  const uint64_t stop = progress_.empty() ? UINT64_MAX : progress_.front().first;
  while (!records_.empty() && out.size() < max && popped_ < stop) {
    out.push_back(std::move(records_.front()));
    records_.pop_front();
    ++popped_;
  }
  lock.unlock();
  if (was_full) not_full_.notify_all();
  return true;
}

bool InProcessQueue::cancelled() const { return ReadLocked(mutex_, cancelled_); }

size_t InProcessQueue::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

int64_t InProcessQueue::full_waits() const { return ReadLocked(mutex_, full_waits_); }

QueueInput::QueueInput(InProcessQueue& queue, std::string name, size_t batch)
    : queue_(queue), partitions_{InputPartition{name, "", name}}, batch_size_(batch == 0 ? 1 : batch) {
  batch_.reserve(batch_size_);
}

Result<InputItem> QueueInput::Next(int timeout_ms) {
  (void)timeout_ms;  // Pop blocks until a record, the end, or Cancel
  InputItem item;
  item.partition = 0;
  if (next_ >= batch_.size() && !ended_) {
    next_ = 0;
    progress_.trace_ts_ms = InputItem::kNoTs;
    if (!queue_.Pop(batch_, batch_size_, &progress_)) {
      batch_.clear();
      ended_ = true;
      if (queue_.cancelled()) return Status::Error("in-process queue: cancelled");
      item.kind = InputItem::Kind::kEnded;
      return item;
    }
    if (batch_.empty() && progress_.trace_ts_ms != InputItem::kNoTs) {
      item.kind = InputItem::Kind::kProgress;
      item.ts_ms = progress_.trace_ts_ms;
      item.paused = progress_.paused;
      return item;
    }
  }
  if (next_ >= batch_.size()) return item;  // ended: nothing more
  item.kind = InputItem::Kind::kRecord;
  item.record = &batch_[next_++];
  item.ts_ms = TimestampMsOf(*item.record);
  return item;
}

}  // namespace acmetrace::core

// JobEventSource: a heap of pending lifecycle events over a slot table of in-flight jobs.
#include "acmetrace/producers/job_event_source.h"

#include <sys/stat.h>

#include <algorithm>

namespace acmetrace::producers {

JobEventSource::JobEventSource(core::InputErrors& errors, TimeRange range, int64_t reorder_window_ms)
    : reader_(errors), range_(range), reorder_window_ms_(reorder_window_ms), current_(core::JobEvent{}) {}

core::Status JobEventSource::Open(const std::string& path, std::string cluster) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) bytes_total_ = st.st_size;
  return reader_.Open(path, std::move(cluster));
}

bool JobEventSource::ReadRow() {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
    slot_refs_.push_back(0);
  }
  JobRow& row = slots_[slot];
  if (!reader_.Next(row)) {
    free_slots_.push_back(slot);
    return false;
  }
  const int64_t seq = seq_++;
  int refs = 0;
  int64_t order = row.submit_ms;
  auto push = [&](core::JobEventKind kind, int64_t ts) {
    order = std::max(order, ts);
    if (!range_.Contains(ts)) return;
    heap_.push(Pending{order, seq, static_cast<int>(kind), ts, slot});
    ++refs;
  };
  push(core::JobEventKind::kSubmit, row.submit_ms);
  if (row.start_ms) push(core::JobEventKind::kStart, *row.start_ms);
  if (row.end_ms) push(core::JobEventKind::kEnd, *row.end_ms);
  max_submit_ms_ = std::max(max_submit_ms_, row.submit_ms);
  slot_refs_[slot] = refs;
  if (refs == 0) free_slots_.push_back(slot);
  return true;
}

void JobEventSource::Emit(const Pending& p) {
  const JobRow& row = slots_[p.slot];
  auto& e = std::get<core::JobEvent>(current_);
  e.cluster = reader_.cluster();
  e.event = static_cast<core::JobEventKind>(p.kind);
  e.ts_ms = p.ts_ms;
  e.job_id = row.job_id;
  e.user = row.user;
  e.type = row.type;
  e.node_num = row.node_num;
  e.gpu_num = row.gpu_num;
  e.cpu_num = row.cpu_num;
  const bool started_or_ended = e.event != core::JobEventKind::kSubmit;
  const bool ended = e.event == core::JobEventKind::kEnd;
  e.queue_s = started_or_ended ? row.queue_s : core::kNoSample;
  e.duration_s = ended ? row.duration_s : core::kNoSample;
  e.gpu_time = ended ? row.gpu_time : core::kNoSample;
  if (ended) {
    e.state = row.state;
  } else {
    e.state.clear();
  }
  if (p.order_ms < last_emitted_ms_) ++out_of_order_;
  last_emitted_ms_ = std::max(last_emitted_ms_, p.order_ms);
  if (--slot_refs_[p.slot] == 0) free_slots_.push_back(p.slot);
}

const core::Record* JobEventSource::Next() {
  for (;;) {
    if (!heap_.empty() && (input_done_ || heap_.top().order_ms <= max_submit_ms_ - reorder_window_ms_)) {
      const Pending p = heap_.top();
      heap_.pop();
      Emit(p);
      return &current_;
    }
    if (input_done_) return nullptr;
    if (!ReadRow()) {
      input_done_ = true;
    } else if (heap_.empty() && max_submit_ms_ - reorder_window_ms_ >= range_.to_ms) {
      // Past the end of the range: later rows can only add later submits, but starts and ends
      // of earlier jobs were already queued. Nothing left in range. (Written as a subtraction:
      // to_ms + window overflows when there is no --to, which ended the stream at the first row
      // that had no event in range.)
      input_done_ = true;
    }
  }
}

}  // namespace acmetrace::producers

// Turns job-trace rows (in submit order) into submit/start/end events in event-time order.
#pragma once

#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/producers/job_trace_reader.h"
#include "acmetrace/producers/record_source.h"

namespace acmetrace::producers {

/// Emits a job's lifecycle events in time order. Rows arrive in submit order, so a start or end
/// event waits in a heap until no later row can precede it; memory is bounded by the jobs
/// in flight, not by the file. Ties keep submit order between jobs and lifecycle order within
/// one. Not thread-safe.
class JobEventSource : public RecordSource {
 public:
  /// reorder_window_ms tolerates rows slightly out of submit order; events that still arrive
  /// behind the stream are emitted at once and counted in out_of_order().
  JobEventSource(core::InputErrors& errors, TimeRange range, int64_t reorder_window_ms);

  core::Status Open(const std::string& path, std::string cluster = "");

  const core::Record* Next() override;
  int64_t bytes_read() const override { return reader_.bytes_read(); }
  int64_t bytes_total() const override { return bytes_total_; }
  core::Status status() const override { return reader_.status(); }

  const std::string& cluster() const { return reader_.cluster(); }
  int64_t out_of_order() const { return out_of_order_; }

 private:
  struct Pending {
    int64_t order_ms;  // the event time, raised to its job's previous event to keep lifecycle order
    int64_t seq;       // the job's row number: submit order between jobs at equal times
    int kind;          // JobEventKind: lifecycle order within a job
    int64_t ts_ms;     // the published time
    uint32_t slot;
    bool operator>(const Pending& o) const {
      if (order_ms != o.order_ms) return order_ms > o.order_ms;
      if (seq != o.seq) return seq > o.seq;
      return kind > o.kind;
    }
  };

  bool ReadRow();
  void Emit(const Pending& p);

  JobTraceReader reader_;
  TimeRange range_;
  int64_t reorder_window_ms_;
  int64_t bytes_total_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> heap_;
  std::vector<JobRow> slots_;
  std::vector<int> slot_refs_;
  std::vector<uint32_t> free_slots_;
  int64_t seq_ = 0;
  int64_t max_submit_ms_ = std::numeric_limits<int64_t>::min();
  int64_t last_emitted_ms_ = std::numeric_limits<int64_t>::min();
  int64_t out_of_order_ = 0;
  bool input_done_ = false;
  core::Record current_;
};

}  // namespace acmetrace::producers

// ProgressMarkers: the progress-marker schedule of an ordered writer.
#include "acmetrace/kafka/progress_markers.h"

#include <utility>

namespace acmetrace::kafka {

ProgressMarkers::ProgressMarkers(std::vector<int32_t> partition_counts, int64_t progress_every_ms)
    : every_ms_(progress_every_ms) {
  for (const int32_t n : partition_counts) last_ms_.emplace_back(static_cast<size_t>(n > 0 ? n : 0), kNoTraceTs);
}

bool ProgressMarkers::DueBefore(int64_t trace_ts_ms) {
  if (every_ms_ <= 0 || trace_ts_ms == kNoTraceTs || trace_ts_ms < next_ms_) return false;
  // Everything written so far is at or before this record's time, and so is all that follows: no
  // partition gets anything earlier. The first record has nothing before it to mark.
  const bool first = next_ms_ == kNoTraceTs;
  next_ms_ = trace_ts_ms + every_ms_;
  round_ms_ = trace_ts_ms;
  return !first;
}

}  // namespace acmetrace::kafka

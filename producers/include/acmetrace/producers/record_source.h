// The pull interface every reader-side stage implements, and the time window it honours.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "acmetrace/core/record.h"
#include "acmetrace/core/status.h"

namespace acmetrace::producers {

/// Half-open trace-time range [from_ms, to_ms) in unix milliseconds.
struct TimeRange {
  int64_t from_ms = std::numeric_limits<int64_t>::min();
  int64_t to_ms = std::numeric_limits<int64_t>::max();
  bool Contains(int64_t ts_ms) const { return ts_ms >= from_ms && ts_ms < to_ms; }
};

/// The trace time a source will cover, for progress: known or cheaply estimated when it opens.
struct TraceSpan {
  std::optional<int64_t> first_ms;  // where the replayed window starts (--from), if known before reading
  std::optional<int64_t> last_ms;   // the last record's time (estimated, or --to), if known
  /// Where a paced replay's schedule starts: the telemetry's first sample. A trace cut from a longer
  /// one holds the jobs pending or running when its telemetry begins, submitted days before; those
  /// records go out at once, not paced through days without telemetry.
  std::optional<int64_t> pace_from_ms;
};

/// A stream of records in event-time order. Not thread-safe.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  /// The next record, valid until the next call; nullptr at the end (or on a fatal read error,
  /// then status() says which).
  virtual const core::Record* Next() = 0;
  /// Bytes of input consumed so far.
  virtual int64_t bytes_read() const = 0;
  /// Total bytes of input, for progress (0 if unknown).
  virtual int64_t bytes_total() const = 0;
  /// The trace time this source covers (progress by trace time); unknown by default.
  virtual TraceSpan span() const { return {}; }
  virtual core::Status status() const = 0;
};

}  // namespace acmetrace::producers

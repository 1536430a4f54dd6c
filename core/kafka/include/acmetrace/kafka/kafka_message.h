// What a record becomes on Kafka: key, JSON value, timestamp and the trace_ts_ms header.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "acmetrace/core/record.h"
#include "acmetrace/kafka/kafka_config.h"

namespace acmetrace::kafka {

/// Header carrying the record's trace time (unix ms, decimal text), whatever the Kafka timestamp is.
inline constexpr std::string_view kTraceTsHeader = "trace_ts_ms";
inline constexpr int64_t kNoTraceTs = std::numeric_limits<int64_t>::min();
/// Header of a stream marker: a record with no key and no value that a writer puts into every
/// partition of its stream topics (docs/kafka.md "Stream markers"). "progress": the writer writes
/// nothing with a trace time below the marker's trace_ts_ms into this partition any more (the
/// replay's records come in trace-time order). "end:CLUSTERS": the writer's stream ended; it wrote
/// these clusters (comma-separated).
inline constexpr std::string_view kMarkerHeader = "acmetrace_marker";
inline constexpr std::string_view kProgressMarker = "progress";
// A progress marker of a writer that is paused (its replay's control endpoint): alive, not ended.
inline constexpr std::string_view kPausedProgressMarker = "progress:paused";
inline constexpr std::string_view kEndMarkerPrefix = "end:";

/// One message to produce. The views need only outlive the Produce call (the sink copies). Value type.
struct OutgoingMessage {
  std::string_view topic;
  std::string_view key;
  std::string_view value;
  int64_t timestamp_ms = 0;          // 0 = the produce (wall) time, stamped by librdkafka
  int64_t trace_ts_ms = kNoTraceTs;  // sent as the trace_ts_ms header unless kNoTraceTs
};

/// Turns records into OutgoingMessages: design key, core::AppendRecordJson value, timestamp per
/// mode. The message views point into the encoder's buffers, valid until the next Encode.
/// Not thread-safe.
class MessageEncoder {
 public:
  explicit MessageEncoder(TimestampMode mode) : mode_(mode) {}
  OutgoingMessage Encode(const core::Record& record);

 private:
  TimestampMode mode_;
  std::string key_;
  std::string value_;
};

/// Writes ts as decimal text into buf (at least 21 bytes); returns the view of it.
std::string_view FormatTraceTs(int64_t ts_ms, char* buf);
/// Reads a trace_ts_ms header value; nullopt if it is not a whole integer.
std::optional<int64_t> ParseTraceTs(std::string_view text);

}  // namespace acmetrace::kafka

// What a record becomes on Kafka: key, JSON value (its trace time inside), timestamp, and the
// trace_ts_ms header of stream markers (of records too with kafka.trace_ts_header).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "acmetrace/core/record.h"
#include "acmetrace/core/stream_markers.h"
#include "acmetrace/kafka/kafka_config.h"

namespace acmetrace::kafka {

/// Header carrying a marker's trace time (unix ms, decimal text), whatever the Kafka timestamp is; a
/// record's too with kafka.trace_ts_header (its value has it anyway).
inline constexpr std::string_view kTraceTsHeader = "trace_ts_ms";
inline constexpr int64_t kNoTraceTs = core::kNoTraceTs;
/// What a reader orders by for a trace_ts_ms header that is not a trace time (year 9999, INT64_MAX,
/// not a number): first, so that it is handed over and reported at once instead of holding its
/// partition back behind every other.
inline constexpr int64_t kInvalidTraceTs = std::numeric_limits<int64_t>::min() + 1;
/// Header of a stream marker (core/stream_markers.h): a record with no key and no value that a
/// writer puts into every partition of its stream topics, the marker's text in this header and its
/// trace time in trace_ts_ms (docs/kafka.md "Stream markers").
inline constexpr std::string_view kMarkerHeader = "acmetrace_marker";
using core::kEndMarkerPrefix;
using core::kPausedProgressMarker;
using core::kProgressMarker;

/// One message to produce. The views need only outlive the Produce call (the sink copies). Value type.
struct OutgoingMessage {
  std::string_view topic;
  std::string_view key;
  std::string_view value;
  int64_t timestamp_ms = 0;          // 0 = the produce (wall) time, stamped by librdkafka
  int64_t trace_ts_ms = kNoTraceTs;  // its trace time (in the value too): progress markers, kafka.trace_ts_header
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

/// What a consumed message's stream headers make it: core::ReadStreamMarker of its acmetrace_marker
/// header (marker; empty when the message is not a marker: it has a key or a value, or no such
/// header) and its trace_ts_ms header (trace_ts; empty when absent).
using StreamHeaders = core::StreamMarker;
inline StreamHeaders ReadStreamHeaders(std::string_view marker, std::string_view trace_ts) {
  return core::ReadStreamMarker(marker, trace_ts);
}

}  // namespace acmetrace::kafka

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
/// What a reader orders by for a trace_ts_ms header that is not a trace time (year 9999, INT64_MAX,
/// not a number): first, so that it is handed over and reported at once instead of holding its
/// partition back behind every other.
inline constexpr int64_t kInvalidTraceTs = std::numeric_limits<int64_t>::min() + 1;
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

/// What a consumed message's stream headers make it. Readers trust a marker as far as a record: its
/// time must be one a record may have (core::IsTraceTimeMs), and what it claims beyond that is the
/// processors' to bound (docs/kafka.md "Trust"). Value type; views point into the header texts.
struct StreamHeaders {
  enum class Kind {
    kRecord,       // not a marker
    kProgress,     // a progress marker at trace_ts_ms
    kEnd,          // an end marker naming clusters ("" = every cluster)
    kOtherMarker,  // a marker of a later version: skipped
    kInvalid,      // a header no writer of ours writes: an input error (error says why)
  };
  Kind kind = Kind::kRecord;
  int64_t trace_ts_ms = kNoTraceTs;  // kNoTraceTs: no trace_ts_ms header
  std::string_view clusters;
  bool paused = false;  // kProgress: a paused writer's heartbeat (kPausedProgressMarker)
  std::string error;
};

/// Reads a message's acmetrace_marker header (marker; empty when the message is not a marker: it has
/// a key or a value, or no such header) and its trace_ts_ms header (trace_ts; empty when absent).
/// A trace_ts_ms that is not a whole integer in the trace years, a progress marker without one, and
/// an end marker naming a cluster longer than core::kMaxNameBytes are kInvalid.
StreamHeaders ReadStreamHeaders(std::string_view marker, std::string_view trace_ts);

}  // namespace acmetrace::kafka

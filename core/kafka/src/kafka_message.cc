// Record → Kafka message encoding.
#include "acmetrace/kafka/kafka_message.h"

#include <charconv>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/time.h"

namespace acmetrace::kafka {

OutgoingMessage MessageEncoder::Encode(const core::Record& record) {
  key_.clear();
  core::AppendKey(key_, record);
  value_.clear();
  core::AppendRecordJson(value_, record);
  OutgoingMessage m;
  m.topic = core::TopicOf(record);
  m.key = key_;
  m.value = value_;
  m.trace_ts_ms = core::TimestampMsOf(record);
  m.timestamp_ms = mode_ == TimestampMode::kTrace ? m.trace_ts_ms : 0;
  return m;
}

std::string_view FormatTraceTs(int64_t ts_ms, char* buf) {
  const std::to_chars_result r = std::to_chars(buf, buf + 21, ts_ms);
  return std::string_view(buf, static_cast<size_t>(r.ptr - buf));
}

std::optional<int64_t> ParseTraceTs(std::string_view text) {
  int64_t v = 0;
  const std::from_chars_result r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

StreamHeaders ReadStreamHeaders(std::string_view marker, std::string_view trace_ts) {
  StreamHeaders h;
  auto invalid = [&h](std::string error) {
    h.kind = StreamHeaders::Kind::kInvalid;
    h.error = std::move(error);
    return h;
  };
  if (!trace_ts.empty()) {
    const std::optional<int64_t> ts = ParseTraceTs(trace_ts);
    // A marker at year 9999 or INT64_MAX said a partition was done for ever.
    if (!ts || !core::IsTraceTimeMs(*ts)) {
      return invalid("header " + std::string(kTraceTsHeader) + ": " +
                     (ts ? std::string(core::kTraceTimeRangeReason) : std::string("not a whole number of unix ms")) +
                     ": " + core::QuotedValue(trace_ts));
    }
    h.trace_ts_ms = *ts;
  }
  if (marker.empty()) return h;
  if (marker == kProgressMarker || marker == kPausedProgressMarker) {
    if (h.trace_ts_ms == kNoTraceTs) return invalid("progress marker without a " + std::string(kTraceTsHeader) + " header");
    h.kind = StreamHeaders::Kind::kProgress;
    h.paused = marker == kPausedProgressMarker;
    return h;
  }
  if (marker.substr(0, kEndMarkerPrefix.size()) == kEndMarkerPrefix) {
    h.clusters = marker.substr(kEndMarkerPrefix.size());
    for (std::string_view rest = h.clusters; !rest.empty();) {
      const size_t comma = rest.find(',');
      if (rest.substr(0, comma).size() > core::kMaxNameBytes) {
        return invalid("end marker: a cluster name longer than " + std::to_string(core::kMaxNameBytes) + " bytes");
      }
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    h.kind = StreamHeaders::Kind::kEnd;
    return h;
  }
  h.kind = StreamHeaders::Kind::kOtherMarker;
  return h;
}

}  // namespace acmetrace::kafka

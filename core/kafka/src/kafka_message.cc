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

}  // namespace acmetrace::kafka

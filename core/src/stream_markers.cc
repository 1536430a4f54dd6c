// Stream markers: their text, how a reader reads them, and the progress schedule of an ordered writer.
#include "acmetrace/core/stream_markers.h"

#include <simdjson.h>

#include <charconv>
#include <optional>
#include <utility>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/time.h"

namespace acmetrace::core {
namespace {

std::optional<int64_t> ParseTraceTs(std::string_view text) {
  int64_t v = 0;
  const std::from_chars_result r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::string EndMarkerText(const std::vector<std::string>& clusters) {
  std::string marker(kEndMarkerPrefix);
  for (const std::string& cluster : clusters) {
    if (marker.size() > kEndMarkerPrefix.size()) marker += ',';
    marker += cluster;
  }
  return marker;
}

StreamMarker ReadStreamMarker(std::string_view marker, std::string_view trace_ts) {
  StreamMarker h;
  auto invalid = [&h](std::string error) {
    h.kind = StreamMarker::Kind::kInvalid;
    h.error = std::move(error);
    return h;
  };
  if (!trace_ts.empty()) {
    const std::optional<int64_t> ts = ParseTraceTs(trace_ts);
    // A marker at year 9999 or INT64_MAX said a partition was done for ever.
    if (!ts || !IsTraceTimeMs(*ts)) {
      return invalid("header trace_ts_ms: " +
                     (ts ? std::string(kTraceTimeRangeReason) : std::string("not a whole number of unix ms")) + ": " +
                     QuotedValue(trace_ts));
    }
    h.trace_ts_ms = *ts;
  }
  if (marker.empty()) return h;
  if (marker == kProgressMarker || marker == kPausedProgressMarker) {
    if (h.trace_ts_ms == kNoTraceTs) return invalid("progress marker without a trace_ts_ms header");
    h.kind = StreamMarker::Kind::kProgress;
    h.paused = marker == kPausedProgressMarker;
    return h;
  }
  if (marker.substr(0, kEndMarkerPrefix.size()) == kEndMarkerPrefix) {
    h.clusters = marker.substr(kEndMarkerPrefix.size());
    for (std::string_view rest = h.clusters; !rest.empty();) {
      const size_t comma = rest.find(',');
      if (rest.substr(0, comma).size() > kMaxNameBytes) {
        return invalid("end marker: a cluster name longer than " + std::to_string(kMaxNameBytes) + " bytes");
      }
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    h.kind = StreamMarker::Kind::kEnd;
    return h;
  }
  h.kind = StreamMarker::Kind::kOtherMarker;
  return h;
}

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

namespace {
constexpr std::string_view kMarkerLineStart = "{\"marker\":";
}  // namespace

void AppendMarkerLine(std::string& out, std::string_view marker, int64_t trace_ts_ms) {
  out.append(kMarkerLineStart);
  AppendJsonString(out, marker);
  if (trace_ts_ms != kNoTraceTs) {
    out.append(",\"trace_ts_ms\":");
    out.append(std::to_string(trace_ts_ms));
  }
  out.append("}\n");
}

bool ReadMarkerLine(std::string_view line, std::string& text, std::string& trace_ts) {
  // Records are framed lines ({"topic":...}): only a line that starts as a marker is parsed.
  if (line.substr(0, kMarkerLineStart.size()) != kMarkerLineStart) return false;
  static thread_local simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(line.data(), line.size()).get(object) != simdjson::SUCCESS) return false;
  bool has_marker = false;
  trace_ts.clear();
  for (const auto field : object) {
    if (field.key == "marker") {
      std::string_view value;
      if (field.value.get(value) != simdjson::SUCCESS) return false;
      text.assign(value);
      has_marker = true;
    } else if (field.key == "trace_ts_ms") {
      // The number's own text: ReadStreamMarker decides what a trace time is.
      if (!field.value.is_number()) return false;
      trace_ts = simdjson::minify(field.value);
    } else {
      return false;
    }
  }
  return has_marker;
}

}  // namespace acmetrace::core

// Fuzzes the stream headers of a consumed Kafka message (kafka::ReadStreamHeaders): the
// acmetrace_marker and trace_ts_ms headers a foreign writer on the input topics controls. The input
// is the marker header, a NUL byte, then the trace_ts_ms header (no NUL: the marker alone). Checks
// that only a time of the trace years comes out, that a progress marker always has one, that an end
// marker's cluster list is the marker's tail with bounded names, and that an error is one short line.
#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/record.h"
#include "acmetrace/core/time.h"
#include "acmetrace/kafka/kafka_message.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  const std::string input(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  const size_t nul = input.find('\0');
  const std::string marker = input.substr(0, nul);
  const std::string trace_ts = nul == std::string::npos ? std::string() : input.substr(nul + 1);
  const kafka::StreamHeaders h = kafka::ReadStreamHeaders(marker, trace_ts);
  using Kind = kafka::StreamHeaders::Kind;
  if (h.kind == Kind::kInvalid) {
    ACMETRACE_FUZZ_CHECK(!h.error.empty() && h.error.size() < 400 && h.error.find('\n') == std::string::npos);
    return 0;
  }
  ACMETRACE_FUZZ_CHECK(h.error.empty());
  ACMETRACE_FUZZ_CHECK(h.trace_ts_ms == kafka::kNoTraceTs || core::IsTraceTimeMs(h.trace_ts_ms));
  ACMETRACE_FUZZ_CHECK((h.trace_ts_ms == kafka::kNoTraceTs) == trace_ts.empty());
  switch (h.kind) {
    case Kind::kRecord:
      ACMETRACE_FUZZ_CHECK(marker.empty());
      break;
    case Kind::kProgress:
      ACMETRACE_FUZZ_CHECK((marker == kafka::kProgressMarker || marker == kafka::kPausedProgressMarker) &&
                           h.trace_ts_ms != kafka::kNoTraceTs);
      ACMETRACE_FUZZ_CHECK(h.paused == (marker == kafka::kPausedProgressMarker));
      break;
    case Kind::kEnd: {
      ACMETRACE_FUZZ_CHECK(marker.size() >= h.clusters.size() &&
                           std::string_view(marker).substr(marker.size() - h.clusters.size()) == h.clusters);
      std::string_view rest = h.clusters;
      while (!rest.empty()) {
        const size_t comma = rest.find(',');
        ACMETRACE_FUZZ_CHECK(rest.substr(0, comma).size() <= core::kMaxNameBytes);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
      break;
    }
    case Kind::kOtherMarker:
      ACMETRACE_FUZZ_CHECK(!marker.empty() && marker != kafka::kProgressMarker);
      break;
    case Kind::kInvalid:
      break;
  }
  return 0;
}

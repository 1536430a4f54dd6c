// libFuzzer target for the remote write parsers: any bytes (first byte 'w') as a request body a
// receiver decodes (snappy, then WriteRequest), (first byte 'r') as a receiver's Retry-After value
// (a wait never negative but -1), or as scrape text lines that backfill --remote-write
// reads back into labels and values. Errors only, never a crash or a hang; what decodes encodes and
// decodes to the same; what parses has a name and sorted labels.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "acmetrace/history/remote_write_output.h"
#include "acmetrace/remote_write/http_transport.h"
#include "acmetrace/remote_write/write_request.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text[0] == 'w') {
    core::Result<std::vector<remote_write::TimeSeries>> decoded = remote_write::DecodeWriteRequest(text.substr(1));
    if (!decoded.ok()) return 0;
    core::Result<std::vector<remote_write::TimeSeries>> again =
        remote_write::DecodeWriteRequest(remote_write::EncodeWriteRequest(decoded.value()));
    ACMETRACE_FUZZ_CHECK(again.ok());
    ACMETRACE_FUZZ_CHECK(again.value().size() == decoded.value().size());
    for (size_t i = 0; i < decoded.value().size(); ++i) {
      ACMETRACE_FUZZ_CHECK(again.value()[i].labels == decoded.value()[i].labels);
      ACMETRACE_FUZZ_CHECK(again.value()[i].samples.size() == decoded.value()[i].samples.size());
    }
    return 0;
  }
  if (!text.empty() && text[0] == 'r') {
    const int64_t wait_ms = remote_write::ParseRetryAfterMs(text.substr(1), 1'445'412'480'000);
    ACMETRACE_FUZZ_CHECK(wait_ms >= -1);
    return 0;
  }
  history::ParsedSample sample;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    core::Status s = history::ParseOpenMetricsSample(line, sample);
    if (!s.ok()) {
      ACMETRACE_FUZZ_CHECK(s.message().find('\n') == std::string::npos);
      continue;
    }
    ACMETRACE_FUZZ_CHECK(!sample.labels.empty());
    for (size_t i = 1; i < sample.labels.size(); ++i) {
      ACMETRACE_FUZZ_CHECK(!(sample.labels[i].name < sample.labels[i - 1].name));
    }
    ACMETRACE_FUZZ_CHECK(sample.series.size() <= line.size());
    ACMETRACE_FUZZ_CHECK(history::SeriesTextEnd(line) == sample.series.size());  // the known-series fast path
  }
  return 0;
}

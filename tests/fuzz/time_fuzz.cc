// Fuzzes trace time parsing (ParseTimeMs: ISO 8601 with an offset, or unix seconds). Checks that a
// parsed trace time formats back to text that parses to the same second, at any whole-quarter-hour
// offset, and that every accepted ISO time names a real calendar date (no "2023-02-30").
#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/time.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace::core;
  if (size < 1) return 0;
  // The first byte picks the offset used to format the value back (-12:00 .. +14:00 by 15 min).
  const int offset_minutes = (static_cast<int>(data[0]) % 105 - 48) * 15;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);  // exact size for ASan
  const std::optional<int64_t> iso = ParseIsoTimeMs(text);
  const std::optional<int64_t> unix_seconds = ParseUnixSecondsMs(text);
  const std::optional<int64_t> any = ParseTimeMs(text);
  ACMETRACE_FUZZ_CHECK(!(iso && unix_seconds));  // the two forms never overlap
  ACMETRACE_FUZZ_CHECK(any == (iso ? iso : unix_seconds));
  if (!any || !IsTraceTimeMs(*any)) return 0;
  const int64_t second_ms = *any - ((*any % 1000) + 1000) % 1000;  // milliseconds dropped
  const std::string formatted = FormatIsoTime(*any, offset_minutes);
  const std::optional<int64_t> back = ParseTimeMs(formatted);
  ACMETRACE_FUZZ_CHECK(back.has_value() && *back == second_ms);
  if (iso) {
    // The date as written is a real one: formatting in the text's own offset gives its date back.
    const std::string_view date(text.data(), 10);
    bool found = false;
    for (int off = -24 * 60; off <= 24 * 60 && !found; off += 15) {
      found = FormatIsoTime(*iso, off).compare(0, 10, date) == 0;
    }
    ACMETRACE_FUZZ_CHECK(found);
  }
  return 0;
}

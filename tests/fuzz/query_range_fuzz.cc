// libFuzzer target for Prometheus's answers to /api/v1/query_range (scoring::ParseQueryRangeResponse),
// then what the scorer does with them: the alert state machine (scoring::ReplayAlertRule) over the
// series. A hostile server's answer is an error of one bounded line, or series of rising trace times
// with the samples left out counted; the state machine gives intervals inside the window.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/time.h"
#include "acmetrace/scoring/alert_state.h"
#include "acmetrace/scoring/range_query.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  core::Result<scoring::RangeAnswer> answer = scoring::ParseQueryRangeResponse(body);
  if (!answer.ok()) {
    ACMETRACE_FUZZ_CHECK(answer.status().message().find('\n') == std::string::npos);
    ACMETRACE_FUZZ_CHECK(answer.status().message().size() < 1024);
    return 0;
  }
  const scoring::RangeAnswer& a = answer.value();
  ACMETRACE_FUZZ_CHECK(a.bad_samples >= 0);
  ACMETRACE_FUZZ_CHECK((a.bad_samples == 0) == a.first_bad_sample.empty());
  ACMETRACE_FUZZ_CHECK(a.first_bad_sample.size() < 512 && a.first_bad_sample.find('\n') == std::string::npos);
  ACMETRACE_FUZZ_CHECK(static_cast<int64_t>(a.series.size()) <= scoring::kMaxSeriesPerAnswer);
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const scoring::Series& s : a.series) {
    for (size_t i = 0; i < s.ts_ms.size(); ++i) {
      ACMETRACE_FUZZ_CHECK(core::IsTraceTimeMs(s.ts_ms[i]));
      ACMETRACE_FUZZ_CHECK(i == 0 || s.ts_ms[i] > s.ts_ms[i - 1]);
      first = std::min(first, s.ts_ms[i]);
      last = std::max(last, s.ts_ms[i]);
    }
  }
  if (first > last) return 0;
  // Evaluate over a window around the samples, as the run would (at most ten minutes of 1 s steps).
  scoring::AlertRule rule;
  rule.name = "Fuzz";
  rule.for_ms = 60'000;
  rule.keep_firing_for_ms = 30'000;
  const int64_t step = 1'000;
  const int64_t start = first - first % step;
  const int64_t end = std::min(last, start + 600'000);
  for (const scoring::FiringInterval& f :
       scoring::ReplayAlertRule(a.series, rule, {start, end, step, rule.for_ms, rule.keep_firing_for_ms})) {
    ACMETRACE_FUZZ_CHECK(f.start_ms >= start && f.start_ms <= f.end_ms && f.end_ms <= end + rule.keep_firing_for_ms);
  }
  return 0;
}

// libFuzzer target for the input files of `acmetrace score`: any bytes as faults.csv
// (scoring::LoadFaultsCsv), or, first byte 'a', as an acme.anomalies file (scoring::LoadAnomalyFlags),
// or, first byte 'b', as a --baseline scorecard (scoring::LoadBaseline).
// Errors are one line naming the file, of bounded size (a huge cell is echoed cut); what loads is
// sorted, of trace times, and flags lie in the window.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/time.h"
#include "acmetrace/scoring/baseline.h"
#include "acmetrace/scoring/incidents.h"
#include "fuzz_support.h"

namespace {

constexpr int64_t kFrom = 1'688'169'600'000;  // 2023-07-01T00:00:00Z
constexpr int64_t kTo = kFrom + 86'400'000;

void CheckError(const std::string& message, const std::string& path) {
  ACMETRACE_FUZZ_CHECK(message.rfind(path + ":", 0) == 0);
  ACMETRACE_FUZZ_CHECK(message.find('\n') == std::string::npos);
  ACMETRACE_FUZZ_CHECK(message.size() < path.size() + 512);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  if (size > 0 && data[0] == 'a') {
    const std::string path = fuzz::WriteInput("anomalies.jsonl", data + 1, size - 1);
    int64_t duplicates = -1;
    core::Result<std::vector<scoring::FlagKind>> flags = scoring::LoadAnomalyFlags(path, kFrom, kTo, &duplicates);
    if (!flags.ok()) {
      CheckError(flags.status().message(), path);
      return 0;
    }
    ACMETRACE_FUZZ_CHECK(duplicates >= 0);
    for (const scoring::FlagKind& kind : flags.value()) {
      int64_t last = INT64_MIN;
      for (const scoring::FiringInterval& f : kind.intervals) {
        ACMETRACE_FUZZ_CHECK(f.start_ms >= kFrom && f.start_ms <= kTo && f.end_ms <= kTo);
        ACMETRACE_FUZZ_CHECK(f.start_ms >= last);
        ACMETRACE_FUZZ_CHECK(f.labels.at("kind") == kind.kind);
        last = f.start_ms;
      }
    }
    return 0;
  }
  if (size > 0 && data[0] == 'b') {
    const std::string path = fuzz::WriteInput("baseline.json", data + 1, size - 1);
    core::Result<scoring::Baseline> baseline = scoring::LoadBaseline(path);
    if (!baseline.ok()) {
      CheckError(baseline.status().message(), "--baseline: " + path);
      return 0;
    }
    for (const scoring::BaselineRule& r : baseline.value().rules) {
      ACMETRACE_FUZZ_CHECK(!r.precision || (*r.precision >= 0 && *r.precision <= 1));
      ACMETRACE_FUZZ_CHECK(!r.recall || (*r.recall >= 0 && *r.recall <= 1));
      ACMETRACE_FUZZ_CHECK(r.onsets >= 0 && r.false_alerts >= 0);
    }
    return 0;
  }
  const std::string path = fuzz::WriteInput("faults.csv", data, size);
  core::Result<std::vector<scoring::Incident>> incidents = scoring::LoadFaultsCsv(path);
  if (!incidents.ok()) {
    CheckError(incidents.status().message(), path);
    return 0;
  }
  int64_t last = INT64_MIN;
  for (const scoring::Incident& i : incidents.value()) {
    ACMETRACE_FUZZ_CHECK(core::IsTraceTimeMs(i.start_ms) && core::IsTraceTimeMs(i.end_ms));
    ACMETRACE_FUZZ_CHECK(i.end_ms >= i.start_ms && i.start_ms >= last);
    ACMETRACE_FUZZ_CHECK(!i.cluster.empty() && !i.kind.empty());  // an empty subject: unknown
    ACMETRACE_FUZZ_CHECK(i.severity <= scoring::IncidentSeverity::kCritical);
    last = i.start_ms;
  }
  return 0;
}

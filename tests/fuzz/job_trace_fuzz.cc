// Fuzzes the job trace reader and the job events made from it (producers::JobEventSource: header
// lookup of both published schemas, integers, numbers, times, the reorder window). Checks that
// every event is a trace time and counts are non-negative. (Order is not checked: a row later than
// the reorder window is emitted late and counted, by design.)
#include <cstdint>
#include <string>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record.h"
#include "acmetrace/core/time.h"
#include "acmetrace/producers/job_event_source.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  if (size < 1) return 0;
  // The first byte picks the reorder window (0 s to 25 min); the rest is trace_seren.csv.
  const int64_t reorder_ms = int64_t{data[0]} * 6'000;
  const std::string path = fuzz::WriteInput("trace_seren.csv", data + 1, size - 1);
  core::InputErrors errors(nullptr);
  producers::JobEventSource source(errors, producers::TimeRange{}, reorder_ms);
  if (!source.Open(path).ok()) return 0;  // no header, or not a job trace: an error, not a crash
  while (const core::Record* record = source.Next()) {
    const auto* event = std::get_if<core::JobEvent>(record);
    ACMETRACE_FUZZ_CHECK(event != nullptr);
    ACMETRACE_FUZZ_CHECK(core::IsTraceTimeMs(event->ts_ms));
    ACMETRACE_FUZZ_CHECK(!event->job_id.empty());
    ACMETRACE_FUZZ_CHECK(event->gpu_num >= 0 && event->node_num >= 0 && event->cpu_num >= 0);
  }
  ACMETRACE_FUZZ_CHECK(source.status().ok());
  return 0;
}

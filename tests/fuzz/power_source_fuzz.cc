// Fuzzes the IPMI power reader (producers::PowerSource): header, Time, cells, the GPU_A/GPU_B
// decision of GPU_AB files. Checks that every record is a trace time with finite fields and a
// model.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record.h"
#include "acmetrace/core/time.h"
#include "acmetrace/producers/power_source.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  if (size < 1) return 0;
  // The first byte picks the file: GPU_AB (model decided per row) or a named model.
  const std::string name = (data[0] & 1) != 0 ? "GPU_AB_Power.csv" : "CPU_D_Power.csv";
  const std::vector<std::string> files = {fuzz::WriteInput(name, data + 1, size - 1)};
  core::InputErrors errors(nullptr);
  producers::PowerSource source("seren", files, errors, producers::TimeRange{});
  while (const core::Record* record = source.Next()) {
    const auto* sample = std::get_if<core::PowerSample>(record);
    ACMETRACE_FUZZ_CHECK(sample != nullptr);
    ACMETRACE_FUZZ_CHECK(core::IsTraceTimeMs(sample->ts_ms));
    ACMETRACE_FUZZ_CHECK(!sample->model.empty());
    for (const auto& [field, value] : sample->fields) ACMETRACE_FUZZ_CHECK(std::isfinite(value));
  }
  return 0;
}

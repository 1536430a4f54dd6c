// Fuzzes the utilization log readers (producers::UtilizationSource over one metric file, or two
// split files of one metric with a seam between them) from the header's column mapping to the
// merged records. Checks what consumers rely on: records come in time order, every time is a trace
// time, GPU arrays stay within kMaxGpusPerNode, and no value is infinite (a bad cell is no sample).
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record.h"
#include "acmetrace/core/time.h"
#include "acmetrace/producers/utilization_source.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  if (size < 1) return 0;
  // The first byte names the metric (a GPU metric, a host metric, an unknown one, split files).
  static constexpr const char* kNames[] = {"GPU_UTIL.csv", "NODE_CPU_UTILIZATION.csv", "NODE_IB_SEND.csv",
                                           "CUSTOM_METRIC.csv", "GPU_TEMP-2023-03-01.csv"};
  const size_t which = data[0] % std::size(kNames);
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> files;
  if (which == 4) {
    // Split files: a line "====" divides the input into the 1st and 2nd day's file.
    const size_t seam = input.find("\n====\n");
    const std::string_view first = input.substr(0, seam);
    files.push_back(fuzz::WriteInput(kNames[4], reinterpret_cast<const uint8_t*>(first.data()), first.size()));
    const std::string_view second = seam == std::string_view::npos ? std::string_view() : input.substr(seam + 6);
    files.push_back(fuzz::WriteInput("GPU_TEMP-2023-03-02.csv", reinterpret_cast<const uint8_t*>(second.data()),
                                     second.size()));
  } else {
    files.push_back(fuzz::WriteInput(kNames[which], data + 1, size - 1));
  }
  core::InputErrors errors(nullptr);
  producers::UtilizationSource source("seren", files, errors, producers::TimeRange{});
  int64_t last_ts = INT64_MIN;
  while (const core::Record* record = source.Next()) {
    const auto* sample = std::get_if<core::UtilSample>(record);
    ACMETRACE_FUZZ_CHECK(sample != nullptr);
    ACMETRACE_FUZZ_CHECK(core::IsTraceTimeMs(sample->ts_ms));
    ACMETRACE_FUZZ_CHECK(sample->ts_ms >= last_ts);
    last_ts = sample->ts_ms;
    ACMETRACE_FUZZ_CHECK(!sample->node.empty());
    for (const core::GpuMetric& m : sample->gpu) {
      ACMETRACE_FUZZ_CHECK(!m.values.empty() && m.values.size() <= core::kMaxGpusPerNode);
      for (double v : m.values) ACMETRACE_FUZZ_CHECK(!std::isinf(v));
    }
    for (const core::HostMetric& h : sample->host) ACMETRACE_FUZZ_CHECK(!std::isinf(h.value));
  }
  ACMETRACE_FUZZ_CHECK(source.status().ok());
  return 0;
}

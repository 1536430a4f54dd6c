// Fuzzes the file transport's reader (pipeline/src/transports/file.cc) on a partition file anyone
// can write: framed record lines and marker lines ({"marker":"progress","trace_ts_ms":T}). Checks
// that every line comes out as one item (a record, a marker or an unreadable line with a one-line
// reason), with offsets that are the line numbers, in order, and that the reader ends (caught up)
// without waiting.
#include <cstdint>
#include <filesystem>
#include <string>

#include "acmetrace/core/config.h"
#include "acmetrace/pipeline/config_keys.h"
#include "acmetrace/pipeline/hops.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  static pipeline::Transport* const transport = [] {
    static core::Config config;
    pipeline::DeclareAllConfig(config);
    if (!config.Set("file.dir", fuzz::ScratchDir()).ok()) std::abort();
    core::Result<std::unique_ptr<pipeline::Transport>> made = pipeline::FindTransport("file")->make(config, stderr);
    if (!made.ok()) std::abort();
    return made.value().release();
  }();
  std::filesystem::create_directories(fuzz::ScratchDir() + "/acme.metrics");
  fuzz::WriteInput("acme.metrics/0.jsonl", data, size);
  core::Result<std::unique_ptr<core::RecordInput>> input =
      transport->Reader(pipeline::InputHop{{"acme.metrics"}, pipeline::InputHop::Start::kBeginning});
  ACMETRACE_FUZZ_CHECK(input.ok());
  int64_t lines = 0;  // whole non-empty lines in the input
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) lines += nl > start;
  int64_t items = 0;
  int64_t last_offset = -1;
  for (;;) {
    core::Result<core::InputItem> next = input.value()->Next(0);
    ACMETRACE_FUZZ_CHECK(next.ok());
    const core::InputItem& item = next.value();
    if (item.kind == core::InputItem::Kind::kCaughtUp) break;
    ACMETRACE_FUZZ_CHECK(item.kind != core::InputItem::Kind::kNothing && item.kind != core::InputItem::Kind::kIdle);
    ACMETRACE_FUZZ_CHECK(item.offset > last_offset && item.offset == item.line_no - 1);
    last_offset = item.offset;
    if (item.kind == core::InputItem::Kind::kUnreadable) {
      ACMETRACE_FUZZ_CHECK(!item.error.empty() && item.error.find('\n') == std::string::npos);
    }
    if (item.kind == core::InputItem::Kind::kRecord) ACMETRACE_FUZZ_CHECK(item.record != nullptr);
    ++items;
  }
  ACMETRACE_FUZZ_CHECK(items <= lines);  // a later version's markers are skipped
  return 0;
}

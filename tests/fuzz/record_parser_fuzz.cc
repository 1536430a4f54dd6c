// Fuzzes the JSON record parser that `process` and `export` run on every input line
// (RecordParser::ParseFramedLine, and ParseValue for each topic). Checks the round trip: a line
// that parses writes (AppendFramedLine) to a line that parses to a record writing the same bytes;
// a parsed record respects the bounds (trace times, kMaxGpusPerNode values per GPU array, names of at
// most kMaxNameBytes); and the
// fast path for util records gives what simdjson alone gives (status, message, record). The trace
// time a Kafka reader orders by (TraceTimeOf): a trace time or none, the same from both paths for
// every value that parses, and for a written value the time of its record.
#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/record.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/time.h"
#include "fuzz_support.h"

namespace {

void CheckBounds(const acmetrace::core::Record& record) {
  using namespace acmetrace::core;
  if (const auto* m = std::get_if<MetricsWindow>(&record)) {
    ACMETRACE_FUZZ_CHECK(IsTraceTimeMs(m->start_ms) && IsTraceTimeMs(m->end_ms));
  } else {
    ACMETRACE_FUZZ_CHECK(IsTraceTimeMs(TimestampMsOf(record)));
  }
  std::visit([](const auto& r) { ACMETRACE_FUZZ_CHECK(r.cluster.size() <= kMaxNameBytes); }, record);
  if (const auto* u = std::get_if<UtilSample>(&record)) {
    ACMETRACE_FUZZ_CHECK(u->node.size() <= kMaxNameBytes);
    for (const GpuMetric& g : u->gpu) ACMETRACE_FUZZ_CHECK(g.name.size() <= kMaxNameBytes);
    ACMETRACE_FUZZ_CHECK(u->gpu.size() <= kMaxValuesPerObject && u->host.size() <= kMaxValuesPerObject);
    for (const GpuMetric& g : u->gpu) ACMETRACE_FUZZ_CHECK(g.values.size() <= kMaxGpusPerNode);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace::core;
  static RecordParser parser;  // reused, as process reuses it: storage of earlier records stays
  static Record record;
  const std::string input(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  std::string key;
  static RecordParser simdjson_only(RecordParser::Path::kSimdjsonOnly);
  static Record simdjson_record;
  std::string simdjson_key;
  const Status framed = parser.ParseFramedLine(input, record, &key);
  const Status framed_simdjson = simdjson_only.ParseFramedLine(input, simdjson_record, &simdjson_key);
  ACMETRACE_FUZZ_CHECK(framed.ok() == framed_simdjson.ok() && framed.message() == framed_simdjson.message());
  if (framed.ok()) {
    std::string a, b;
    AppendFramedLine(a, record);
    AppendFramedLine(b, simdjson_record);
    ACMETRACE_FUZZ_CHECK(a == b && key == simdjson_key);
  }
  if (framed.ok()) {
    CheckBounds(record);
    std::string first;
    AppendFramedLine(first, record);
    Record again;
    RecordParser fresh;
    const Status reparsed = fresh.ParseFramedLine(first, again);
    if (!reparsed.ok()) {
      std::fprintf(stderr, "written line does not parse: %s\n%s\n", reparsed.message().c_str(), first.c_str());
      std::abort();
    }
    std::string second;
    AppendFramedLine(second, again);
    ACMETRACE_FUZZ_CHECK(first == second);
  }
  // The same bytes as a bare value of each topic (what a Kafka message holds).
  static constexpr std::string_view kTopics[] = {kTopicJobs, kTopicUtil, kTopicPower, kTopicMetrics,
                                                 kTopicAnomalies};
  const std::string_view topic = kTopics[size % std::size(kTopics)];
  const Status value = parser.ParseValue(topic, input, record);
  const Status value_simdjson = simdjson_only.ParseValue(topic, input, simdjson_record);
  ACMETRACE_FUZZ_CHECK(value.ok() == value_simdjson.ok() && value.message() == value_simdjson.message());
  if (value.ok()) {
    std::string a, b;
    AppendRecordJson(a, record);
    AppendRecordJson(b, simdjson_record);
    ACMETRACE_FUZZ_CHECK(a == b);
  }
  const int64_t trace_time = parser.TraceTimeOf(topic, input);
  const int64_t trace_time_simdjson = simdjson_only.TraceTimeOf(topic, input);
  ACMETRACE_FUZZ_CHECK(trace_time == kNoTraceTs || IsTraceTimeMs(trace_time));
  // The paths differ only on malformed text, where simdjson (reading it all first) finds none.
  ACMETRACE_FUZZ_CHECK(trace_time == trace_time_simdjson || (trace_time_simdjson == kNoTraceTs && !value.ok()));
  if (value.ok()) {
    CheckBounds(record);
    std::string first;
    AppendRecordJson(first, record);
    ACMETRACE_FUZZ_CHECK(parser.TraceTimeOf(topic, first) == TimestampMsOf(record));
    Record again;
    RecordParser fresh;
    ACMETRACE_FUZZ_CHECK(fresh.ParseValue(topic, first, again).ok());
    std::string second;
    AppendRecordJson(second, again);
    ACMETRACE_FUZZ_CHECK(first == second);
  }
  return 0;
}

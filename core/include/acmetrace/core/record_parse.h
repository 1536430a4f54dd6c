// JSON parsing of records: the inverse of record_json.h (values and the stdio framing), for every
// stage that consumes the feed (processors, exporters).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "acmetrace/core/record.h"
#include "acmetrace/core/status.h"
#include "acmetrace/core/stream_markers.h"

namespace acmetrace::core {

/// Kind of record a topic carries; nullopt-like kUnknown for any other topic.
enum class RecordKind { kJob, kUtil, kPower, kMetrics, kAnomaly, kUnknown };
RecordKind RecordKindOfTopic(std::string_view topic);

/// Parses record JSON (simdjson On-Demand, behind a fast path for util records) back into core::Record: ParseValue(AppendRecordJson(r))
/// == r for every kind, and a framed line rewritten by AppendFramedLine gives the same bytes.
/// Fields may come in any order; unknown fields are skipped; a malformed value or a missing
/// required field is an error naming the field (never a throw). Reuses the storage of `out` when it
/// already holds the same kind, so a steady stream allocates little. Not thread-safe: one parser
/// per thread.
class RecordParser {
 public:
  /// kFastFirst: util records in the plain shape record_json.cc writes are read by a scanner of
  /// their own, anything else by simdjson (the same records and the same errors; see
  /// record_parse.cc). kSimdjsonOnly: simdjson for everything (tests and the fuzzer compare the two).
  enum class Path { kFastFirst, kSimdjsonOnly };

  explicit RecordParser(Path path = Path::kFastFirst);
  ~RecordParser();
  RecordParser(const RecordParser&) = delete;
  RecordParser& operator=(const RecordParser&) = delete;

  /// Parses the JSON value of a record of `topic` (acme.jobs, acme.util, acme.power, acme.metrics,
  /// acme.anomalies).
  Status ParseValue(std::string_view topic, std::string_view json, Record& out);

  /// Parses one stdio line {"topic":..,"key":..,"value":{..}} (a trailing newline is allowed).
  /// key, if given, receives the framed key.
  Status ParseFramedLine(std::string_view line, Record& out, std::string* key = nullptr);

  /// The trace time a record's JSON value of `topic` carries (what TimestampMsOf gives once it is
  /// parsed: `ts_ms`, a metrics window's `end_ms`), read without parsing the rest: a Kafka reader
  /// orders the heads of its partitions by it (docs/kafka.md). The first such top-level member
  /// counts; kNoTraceTs when there is none, it is no whole number or no trace time (ParseValue then
  /// says what is wrong). Our own values are read by a scan that stops at the member; any other
  /// shape by simdjson, with the same answer for every value that parses (text that is no JSON
  /// after the member: the scan answers, simdjson, which reads it all first, finds none).
  int64_t TraceTimeOf(std::string_view topic, std::string_view json);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace acmetrace::core

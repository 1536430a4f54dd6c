// Where a data directory's trace time ends, known without reading it through: the last rows of
// each file (progress by trace time needs the end of the replayed window before the replay gets there).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "acmetrace/producers/event_stream.h"

namespace acmetrace::producers {

/// The latest time in the last rows of one CSV file: its time columns (Time, submit_time,
/// start_time, end_time, fail_time, stop_time, found by header name) in the rows of its last
/// tail_bytes. nullopt if it has no time column or no parseable time there. Reads the header and
/// the tail only.
std::optional<int64_t> LastTimeInCsvTail(const std::string& path, int64_t tail_bytes = 64 * 1024);

/// The latest of LastTimeInCsvTail over a data directory's files (the last of each cluster's split
/// utilization files, every job trace and IPMI file). An estimate: utilization and IPMI rows are in
/// time order, so their last row is exact; a job trace is in submit order, so a job submitted
/// earlier that ends after every job of its last rows is missed (the estimate is then early).
std::optional<int64_t> EstimateLastTimeMs(const DataDirFiles& files);

/// The start of one CSV file: its number of columns (the header's), and the earliest time in its
/// time columns over the rows of its first head_bytes (nullopt: no time column or no row there).
struct CsvHead {
  int columns = 0;
  std::optional<int64_t> first_ms;
};
CsvHead ReadCsvHead(const std::string& path, int64_t head_bytes = 64 * 1024);

/// Where a data directory's telemetry (utilization and IPMI files) starts and ends, from the
/// first and last rows of each file; the job traces' span when there is no telemetry (telemetry =
/// false). nullopt if no file gives a time. last_ms is the last row's time (inclusive).
struct DataSpan {
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  bool telemetry = true;
};
std::optional<DataSpan> EstimateDataSpan(const DataDirFiles& files);

}  // namespace acmetrace::producers

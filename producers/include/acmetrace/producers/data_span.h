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

}  // namespace acmetrace::producers

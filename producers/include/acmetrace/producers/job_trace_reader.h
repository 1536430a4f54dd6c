// Reads job-trace CSVs (Seren and Kalos schemas) row by row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/csv_reader.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/status.h"

namespace acmetrace::producers {

/// One job as published. Times in unix ms; absent times are nullopt; absent numbers NaN.
// A plain member list (the trace's columns), alike in shape only to the synth scheduler's.
struct JobRow {
  std::string job_id;
  std::string user;
  int64_t node_num = 0;
  int64_t gpu_num = 0;
  int64_t cpu_num = 0;
  std::string type;
  std::string state;
  int64_t submit_ms = 0;
  std::optional<int64_t> start_ms;
  std::optional<int64_t> end_ms;
  double duration_s = 0;
  double queue_s = 0;
  double gpu_time = 0;
};

/// Reads one job-trace file. The schema is detected from the header: required columns are
/// found by name (Seren's and Kalos' sets), unknown extra columns are ignored. Malformed rows are
/// reported to InputErrors and skipped. Not thread-safe.
class JobTraceReader {
 public:
  explicit JobTraceReader(core::InputErrors& errors) : errors_(errors) {}

  /// Opens path and reads the header. cluster may be empty: then it is taken from the file name
  /// (trace_<cluster>.csv) or, failing that, from the schema (Kalos has fail_time and stop_time).
  core::Status Open(const std::string& path, std::string cluster = "");

  /// The next well-formed row; false at the end (or on a read error: see status()).
  bool Next(JobRow& row);

  const std::string& cluster() const { return cluster_; }
  const core::Status& status() const { return csv_.status(); }
  int64_t rows_read() const { return rows_; }
  int64_t bytes_read() const { return csv_.bytes_read(); }

 private:
  enum Column { kJobId, kUser, kNodeNum, kGpuNum, kCpuNum, kType, kState, kSubmit, kStart, kEnd,
                kDuration, kQueue, kGpuTime, kColumnCount };
  bool ParseRow(const std::vector<std::string_view>& fields, JobRow& row);
  void Error(std::string_view field, std::string_view reason);

  core::InputErrors& errors_;
  core::CsvReader csv_;
  std::string cluster_;
  int index_[kColumnCount] = {};
  size_t min_fields_ = 0;
  std::vector<std::string_view> fields_;
  int64_t rows_ = 0;
};

/// The cluster a job-trace file belongs to by its name (trace_seren.csv -> "seren"), or "".
std::string ClusterFromTraceFileName(std::string_view path);

}  // namespace acmetrace::producers

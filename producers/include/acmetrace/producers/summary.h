// The release's cluster_summary.csv, computed from job-trace files.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/status.h"
#include "acmetrace/producers/job_trace_reader.h"

namespace acmetrace::producers {

/// Accumulates jobs of one cluster and computes the summary columns. Keeps the run and queue
/// times of every job (for exact medians): 16 bytes a job. Not thread-safe.
class ClusterSummary {
 public:
  void Add(const JobRow& row);
  /// The summary's columns, in the release's order (SummaryColumns()), formatted as the release
  /// writes them (3 decimals, Python float style: "5.68", "122.0").
  std::vector<std::string> Values(const std::string& id) const;
  int64_t jobs() const { return job_num_; }

 private:
  struct Group {  // GPU jobs or CPU jobs
    int64_t count = 0;
    std::vector<double> run, queue, gpus;
    std::map<std::string, int64_t> state_count;
    std::map<std::string, double> state_gpu_time;
  };
  int64_t job_num_ = 0;
  Group gpu_, cpu_;
};

/// The release's column names, in its order (starting with "id").
const std::vector<std::string>& SummaryColumns();

/// Reads the files (each a job trace; one row per cluster, in first-seen order, "id" capitalised:
/// Seren, Kalos) and returns the CSV text with a header. Bad rows are reported and skipped.
core::Result<std::string> SummarizeJobTraces(const std::vector<std::string>& files, core::InputErrors& errors);

/// Formats x as the release does: rounded to 3 decimals, shortest text, ".0" for whole numbers.
std::string FormatSummaryNumber(double x);

}  // namespace acmetrace::producers

namespace acmetrace::producers {

/// Compares summary CSV text (as SummarizeJobTraces writes it) with the release's published
/// cluster_summary.csv (embedded): one line per differing cell ("Seren,avg_gpu_num: 5.7 != 5.68"),
/// empty if every row matches its published row by id. Rows whose id the release lacks are named.
std::vector<std::string> CompareWithPublishedSummary(const std::string& computed_csv);

}  // namespace acmetrace::producers

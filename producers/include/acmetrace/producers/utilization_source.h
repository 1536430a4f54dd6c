// Reads a cluster's utilization logs (one wide CSV per metric, or split METRIC-2023-*.csv files)
// and merges them into one UtilSample per node and sample time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "acmetrace/core/csv_reader.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/producers/record_source.h"

namespace acmetrace::producers {

/// Where a utilization column's values go.
struct ColumnTarget {
  std::string node;
  int gpu = -1;  // GPU index, or -1 for a per-node (host) metric
};

/// Parses a column name of a utilization file. GPU metrics: "10.140.1.10-6" or pod-named
/// "lingjun-pod9-0016-3" (node, GPU index). Host metrics: "10.140.1.10" or "10.140.1.10-mlx5_0".
/// A pandas duplicate-column suffix (".1" after an IPv4 address) maps to the same node.
/// nullopt if the name fits neither.
std::optional<ColumnTarget> ParseUtilizationColumn(std::string_view name, bool gpu_metric);

/// True for the release's per-GPU (DCGM) metrics; NODE_* metrics are per node; for other names
/// the columns decide (see UtilizationMetricReader).
bool IsDcgmMetricName(std::string_view metric);

/// The metric a utilization file holds: "GPU_UTIL.csv" and "GPU_UTIL-2023-07-01.csv" both give
/// "GPU_UTIL"; "" if the name is not a CSV file.
std::string MetricNameOfFile(std::string_view file_name);

/// Reads one metric of one cluster: a file, or split files read in order with rows whose Time
/// repeats the previous row dropped (keeping the first, as the release's notebook does).
///
/// The reading (CSV, Time, numbers) runs on a thread of its own, a few rows ahead of the caller,
/// so a replay uses a second core; the caller maps the columns' nodes to its node table. The
/// methods are for one calling thread; the reading thread stops with the reader.
class UtilizationMetricReader {
 public:
  /// Adjacent columns of one node: `count` consecutive GPUs from `gpu` (a node's 8 GPU columns are
  /// usually one run), or one host column (gpu -1, count 1).
  struct Run {
    uint32_t node;    // the source's node index (the header's target on the reading thread)
    uint32_t column;  // first column
    uint32_t count;
    int32_t gpu;
  };

  UtilizationMetricReader(std::string cluster, std::string metric, std::vector<std::string> files,
                          core::InputErrors& errors, TimeRange range);
  ~UtilizationMetricReader();
  UtilizationMetricReader(const UtilizationMetricReader&) = delete;
  UtilizationMetricReader& operator=(const UtilizationMetricReader&) = delete;

  /// Advances to the next row in range; false at the end. node_index maps node names to indices.
  bool NextRow(const std::function<uint32_t(const std::string&)>& node_index);

  int64_t ts_ms() const { return ts_ms_; }
  /// The current row's value per column, core::kNoSample where it has none (empty, not a number,
  /// an ignored column); runs() say which columns go where.
  const double* values() const { return values_.data(); }
  /// The columns of the current file, by node, in column order; never empty runs.
  const std::vector<Run>& runs() const { return runs_; }
  /// GPUs of node in the current file's header (highest index + 1); 0 if none.
  int32_t GpuCount(uint32_t node) const { return node < gpu_count_.size() ? gpu_count_[node] : 0; }
  std::string_view metric() const { return metric_; }
  bool gpu_metric() const;

  /// Rows the reading thread keeps ahead for a file of this many columns: up to kBytesAhead of
  /// values, between kMinRowsAhead and kMaxRowsAhead. A narrow file (a 29-node day: 232 columns)
  /// gets the most, so its threads hand over 64 rows at a time instead of 16 (on that day 2,790
  /// instead of 11,200 thread switches, ~10 % of the replay's CPU); a wide one stays at the minimum,
  /// bounding memory.
  static size_t RowsAheadFor(size_t columns);
  static constexpr size_t kMinRowsAhead = 64;
  static constexpr size_t kMaxRowsAhead = 256;
  static constexpr size_t kBytesAhead = size_t{1} << 20;

  int64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }
  /// Exact once NextRow() has returned false.
  int64_t duplicates_dropped() const { return duplicates_dropped_.load(std::memory_order_relaxed); }
  /// Valid once NextRow() has returned false.
  const core::Status& status() const { return status_; }

 private:
  // What the reading thread hands over: a file's columns by header target (a node of its header),
  // and rows of values by column. Writing one value per column keeps the reading thread (the
  // replay's bottleneck on a wide file) to parsing; the calling thread copies a run at a time.
  struct Header {
    std::vector<std::string> nodes;   // per target
    std::vector<int32_t> gpu_count;   // per target: highest GPU index + 1, 0 for host columns
    std::vector<Run> runs;            // node: the target
    bool gpu_metric = false;
  };
  struct ParsedRow {
    int64_t ts_ms = 0;
    size_t header = 0;           // index into headers_
    std::vector<double> values;  // per column of the header
  };

  // The reading thread.
  void ReadLoop();
  bool ReadRow(ParsedRow& row);
  // A cell that is not a short decimal: its value, or kNoSample and the cell kept in bad_cells_.
  double OtherCell(size_t column, std::string_view cell);
  bool OpenNextFile();
  void Error(std::string_view field, std::string_view reason);
  // The calling thread.
  void MapHeader(size_t header, const std::function<uint32_t(const std::string&)>& node_index);

  // Fixed at construction.
  std::string cluster_;
  std::string_view metric_;  // interned
  std::vector<std::string> files_;
  core::InputErrors& errors_;
  TimeRange range_;

  // Reading thread only.
  size_t next_file_ = 0;
  std::unique_ptr<core::CsvReader> csv_;
  int time_column_ = 0;
  std::vector<int32_t> column_target_;  // per column: header target, or -1 (ignored / Time)
  std::vector<int32_t> column_gpu_;
  std::vector<std::string> header_storage_;
  std::vector<std::string_view> fields_;  // of a header
  std::vector<std::pair<size_t, std::string>> bad_cells_;  // of the row being read: column, text
  bool have_last_ = false;
  bool at_seam_ = false;  // between opening a split file and its first new row
  int64_t last_ts_ms_ = 0;
  int64_t bytes_done_ = 0;  // of files closed

  // Shared, under mutex_.
  // Rows read ahead; each side waits for a quarter of them at once rather than one (a handover per
  // row would cost a thread switch per row). The pool starts at kMinRowsAhead rows and, once the
  // first row shows the file's width, grows to RowsAheadFor(columns).
  size_t handover_ = kMinRowsAhead / 4;
  bool pool_sized_ = false;  // reading thread only
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<ParsedRow>> full_, free_;
  std::deque<Header> headers_;  // append-only: a Header never moves or changes once added
  bool read_done_ = false;
  bool stop_ = false;
  core::Status read_status_ = core::Status::Ok();
  std::atomic<int64_t> bytes_read_{0};
  std::atomic<int64_t> duplicates_dropped_{0};
  std::thread thread_;

  // Calling thread only.
  bool started_ = false;
  bool done_ = false;
  size_t mapped_header_ = SIZE_MAX;
  bool gpu_metric_ = false;
  std::vector<Run> runs_;            // of the mapped header, node: the source's node index
  std::vector<int32_t> gpu_count_;   // per node index
  std::vector<double> values_;
  int64_t ts_ms_ = 0;
  core::Status status_ = core::Status::Ok();
};

/// Merges the metric readers of one cluster into UtilSample records: at each sample time, one
/// record per node that has at least one sample, nodes in name order, metrics in file-name order.
/// Records are reused between calls (no allocation in the steady state). Not thread-safe.
class UtilizationSource : public RecordSource {
 public:
  /// files: every utilization CSV of the cluster (grouped here by metric).
  UtilizationSource(std::string cluster, const std::vector<std::string>& files,
                    core::InputErrors& errors, TimeRange range);

  const core::Record* Next() override;
  int64_t bytes_read() const override;
  int64_t bytes_total() const override { return bytes_total_; }
  core::Status status() const override;

  const std::vector<std::string>& metrics() const { return metric_names_; }
  int64_t duplicates_dropped() const;

 private:
  struct NodeState {
    std::string name;
    core::Record record;
    bool touched = false;
    size_t gpu_used = 0;      // entries of the record's gpu list in use at this time
    int32_t gpu_reader = -1;  // the metric reader that made the last of them (-1: none yet)
    int32_t host_reader = -1; // the metric reader that added the last host metric
  };

  uint32_t NodeIndex(const std::string& name);
  bool BuildBatch();

  std::string cluster_;
  std::vector<std::string> metric_names_;
  std::vector<std::unique_ptr<UtilizationMetricReader>> readers_;
  std::vector<bool> reader_live_;
  std::unordered_map<std::string, uint32_t> node_index_;
  std::vector<NodeState> nodes_;
  std::vector<uint32_t> name_order_;
  std::vector<uint32_t> rank_;
  bool order_dirty_ = false;
  std::vector<uint32_t> batch_;
  size_t batch_pos_ = 0;
  bool started_ = false;
  int64_t bytes_total_ = 0;
};

}  // namespace acmetrace::producers

// Utilization logs: header-driven column mapping and a k-way merge of metric files by Time.
#include "acmetrace/producers/utilization_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"
#include "parts.h"

namespace acmetrace::producers {
namespace {

constexpr std::string_view kKind = "utilization";

constexpr std::string_view kDcgmMetrics[] = {
    "XID_ERRORS", "GPU_TEMP", "MEMORY_TEMP", "MEM_CLOCK", "MEM_COPY_UTIL", "FB_FREE", "FB_USED",
    "DRAM_ACTIVE", "POWER_USAGE", "GPU_UTIL", "PIPE_TENSOR_ACTIVE", "SM_ACTIVE", "SM_OCCUPANCY",
    "SM_CLOCK"};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "a.b.c.d" with each part 1-3 digits.
bool IsIpv4(std::string_view s) {
  int parts = 0;
  while (true) {
    size_t dot = s.find('.');
    std::string_view part = s.substr(0, dot);
    if (part.empty() || part.size() > 3 || !AllDigits(part)) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return parts == 4;
}

// Drops a pandas duplicate-column suffix: "10.140.0.131.1" -> "10.140.0.131".
std::string_view StripPandasDuplicate(std::string_view s) {
  if (IsIpv4(s)) return s;
  size_t dot = s.rfind('.');
  if (dot != std::string_view::npos && AllDigits(s.substr(dot + 1)) && IsIpv4(s.substr(0, dot))) {
    return s.substr(0, dot);
  }
  return s;
}

static_assert(core::CsvReader::kFieldPadding >= 8, "core::ParseShortDecimal reads 8 bytes of a cell");

}  // namespace

bool IsDcgmMetricName(std::string_view metric) {
  return std::find(std::begin(kDcgmMetrics), std::end(kDcgmMetrics), metric) != std::end(kDcgmMetrics);
}

std::string MetricNameOfFile(std::string_view file_name) {
  const size_t slash = file_name.find_last_of('/');
  if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  if (file_name.size() <= 4 || file_name.substr(file_name.size() - 4) != ".csv") return "";
  file_name.remove_suffix(4);
  // A split file: METRIC-YYYY-...
  for (size_t dash = file_name.find('-'); dash != std::string_view::npos;
       dash = file_name.find('-', dash + 1)) {
    if (dash > 0 && AllDigits(file_name.substr(dash + 1, 4)) && file_name.size() >= dash + 5 &&
        (file_name.size() == dash + 5 || file_name[dash + 5] == '-' || file_name[dash + 5] == '_')) {
      return std::string(file_name.substr(0, dash));
    }
  }
  return std::string(file_name);
}

std::optional<ColumnTarget> ParseUtilizationColumn(std::string_view name, bool gpu_metric) {
  name = core::TrimSpaces(name);
  if (name.empty()) return std::nullopt;
  if (gpu_metric) {
    const size_t dash = name.rfind('-');
    if (dash == std::string_view::npos || dash == 0) return std::nullopt;
    std::string_view index = name.substr(dash + 1);
    // A pandas duplicate of a GPU column: "10.140.1.10-6.1".
    if (size_t dot = index.find('.'); dot != std::string_view::npos && AllDigits(index.substr(dot + 1))) {
      index = index.substr(0, dot);
    }
    if (!AllDigits(index) || index.size() > 3) return std::nullopt;
    const int gpu = std::stoi(std::string(index));
    if (gpu >= static_cast<int>(core::kMaxGpusPerNode)) return std::nullopt;  // what every consumer takes
    std::string_view node = StripPandasDuplicate(name.substr(0, dash));
    return ColumnTarget{std::string(node), gpu};
  }
  // Host metric: an IB column names its NIC ("-mlx5_0"); one NIC per server, so it is the node's.
  if (size_t nic = name.find("-mlx5_"); nic != std::string_view::npos && nic > 0) {
    name = name.substr(0, nic);
  }
  return ColumnTarget{std::string(StripPandasDuplicate(name)), -1};
}

// ---------------------------------------------------------------------------------------------

UtilizationMetricReader::UtilizationMetricReader(std::string cluster, std::string metric,
                                                 std::vector<std::string> files,
                                                 core::InputErrors& errors, TimeRange range)
    : cluster_(std::move(cluster)),
      metric_(core::InternName(metric)),
      files_(std::move(files)),
      errors_(errors),
      range_(range) {}

UtilizationMetricReader::~UtilizationMetricReader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool UtilizationMetricReader::gpu_metric() const { return gpu_metric_; }

size_t UtilizationMetricReader::RowsAheadFor(size_t columns) {
  const size_t row_bytes = std::max<size_t>(columns, 1) * sizeof(double);
  return std::clamp(kBytesAhead / row_bytes, kMinRowsAhead, kMaxRowsAhead);
}

void UtilizationMetricReader::Error(std::string_view field, std::string_view reason) {
  errors_.Report(cluster_, kKind, csv_->path(), csv_->line(), field, reason);
}

// ---- the reading thread -----------------------------------------------------------------------

void UtilizationMetricReader::ReadLoop() {
  for (;;) {
    std::unique_ptr<ParsedRow> row;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (free_.empty()) changed_.wait(lock, [this] { return stop_ || free_.size() >= handover_; });
      if (stop_) return;
      row = std::move(free_.front());
      free_.pop_front();
    }
    const bool more = ReadRow(*row) && !errors_.must_stop();
    bytes_read_.store(bytes_done_ + (csv_ ? csv_->bytes_read() : 0), std::memory_order_relaxed);
    std::vector<std::unique_ptr<ParsedRow>> more_rows;
    if (more && !pool_sized_) {  // the first row shows the width: grow the pool for a narrow file
      pool_sized_ = true;
      more_rows.resize(RowsAheadFor(row->values.size()) - kMinRowsAhead);
      for (auto& r : more_rows) r = std::make_unique<ParsedRow>();
    }
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (more) {
        full_.push_back(std::move(row));
      } else {
        read_done_ = true;
      }
      wake = !more || full_.size() == handover_;
      if (!more_rows.empty()) {
        for (auto& r : more_rows) free_.push_back(std::move(r));
        handover_ = (kMinRowsAhead + more_rows.size()) / 4;
        wake = true;  // a waiting side re-reads the handover size
      }
    }
    if (wake) changed_.notify_all();
    if (!more) return;
  }
}

bool UtilizationMetricReader::OpenNextFile() {
  while (next_file_ < files_.size()) {
    if (csv_) bytes_done_ += csv_->bytes_read();
    at_seam_ = have_last_;  // a later split file may start with rows the previous one ended with
    csv_ = std::make_unique<core::CsvReader>();
    const std::string& path = files_[next_file_++];
    if (core::Status s = csv_->Open(path); !s.ok()) {
      errors_.ReportFile(cluster_, kKind, path, s.message().substr(path.size() + 2));  // "cannot open: ..."
      continue;
    }
    csv_->set_error_sink([this](int64_t line, std::string_view field, std::string_view reason) {
      errors_.Report(cluster_, kKind, csv_->path(), line, field, reason);
    });
    if (!csv_->NextRow(fields_)) {
      if (!csv_->status().ok()) {
        std::lock_guard<std::mutex> lock(mutex_);
        read_status_ = csv_->status();
      }
      errors_.ReportFile(cluster_, kKind, path, "empty file: no header");
      continue;
    }
    // Decide per file whether the columns are GPUs or nodes.
    time_column_ = -1;
    for (size_t i = 0; i < fields_.size(); ++i) {
      std::string_view n = core::TrimSpaces(fields_[i]);
      if (n == "Time" || n == "time" || n == "TIME") {
        time_column_ = static_cast<int>(i);
        break;
      }
    }
    if (time_column_ < 0) {
      errors_.Report(cluster_, kKind, path, 1, "Time", "header has no Time column; file skipped");
      continue;
    }
    Header header;
    if (IsDcgmMetricName(metric_)) {
      header.gpu_metric = true;
    } else if (metric_.substr(0, 5) == "NODE_") {
      header.gpu_metric = false;
    } else {
      // Unknown metric: GPU columns if every column reads as IP-index.
      header.gpu_metric = fields_.size() > 1;
      for (size_t i = 0; i < fields_.size(); ++i) {
        if (static_cast<int>(i) == time_column_) continue;
        auto t = ParseUtilizationColumn(fields_[i], true);
        if (!t || !IsIpv4(t->node)) header.gpu_metric = false;
      }
    }
    column_target_.assign(fields_.size(), -1);
    column_gpu_.assign(fields_.size(), -1);
    header_storage_.assign(fields_.begin(), fields_.end());
    std::unordered_map<std::string, int32_t> targets;
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (static_cast<int>(i) == time_column_) continue;
      if (const size_t bytes = core::TrimSpaces(fields_[i]).size(); bytes > core::kMaxNameBytes) {
        // Not a node: a column named with megabytes would otherwise become a node of that name.
        errors_.Report(cluster_, kKind, path, 1, fields_[i],
                       "column name of " + std::to_string(bytes) + " bytes, more than " +
                           std::to_string(core::kMaxNameBytes) + "; column ignored");
        continue;
      }
      std::optional<ColumnTarget> target = ParseUtilizationColumn(fields_[i], header.gpu_metric);
      if (!target) {
        errors_.Report(cluster_, kKind, path, 1, header_storage_[i],
                       header.gpu_metric ? "not a GPU column (IP-index or pod-index, index below 64); column ignored"
                                         : "not a node column; column ignored");
        continue;
      }
      auto [it, added] = targets.emplace(target->node, static_cast<int32_t>(header.nodes.size()));
      if (added) {
        header.nodes.push_back(target->node);
        header.gpu_count.push_back(0);
      }
      column_target_[i] = it->second;
      column_gpu_[i] = target->gpu;
      if (target->gpu >= 0) header.gpu_count[it->second] = std::max(header.gpu_count[it->second], target->gpu + 1);
      Run* last = header.runs.empty() ? nullptr : &header.runs.back();
      if (last != nullptr && target->gpu >= 0 && last->gpu >= 0 && last->node == static_cast<uint32_t>(it->second) &&
          last->column + last->count == i && last->gpu + static_cast<int32_t>(last->count) == target->gpu) {
        ++last->count;
      } else {
        header.runs.push_back(Run{static_cast<uint32_t>(it->second), static_cast<uint32_t>(i), 1, target->gpu});
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    headers_.push_back(std::move(header));
    return true;
  }
  return false;
}

bool UtilizationMetricReader::ReadRow(ParsedRow& row) {
  for (;;) {
    // The cells are parsed as the row is split, before its Time is known to be kept: every column
    // gets a value, kNoSample where there is none (an empty cell). Cells are short
    // decimals ("57.123", "0.0", "100.0"), about 2,300 per row and most of a replay's time; anything
    // else takes OtherCell, which keeps bad cells to report if the row is kept. An ignored column's
    // value is never read.
    const size_t columns = column_target_.size();
    const size_t time_column = static_cast<size_t>(time_column_);
    row.values.resize(columns);
    double* const values = row.values.data();
    size_t fields = 0;
    std::string_view time_cell;
    bad_cells_.clear();
    auto on_cell = [&](std::string_view cell) __attribute__((always_inline)) {
      if (fields < columns) {
        if (fields == time_column) {
          time_cell = cell;
          values[fields] = core::kNoSample;
        } else if (!core::ParseShortDecimal(cell.data(), cell.size(), values[fields])) {
          values[fields] = OtherCell(fields, cell);
        }
      }
      ++fields;
    };
    if (!csv_ || !csv_->status().ok() || !csv_->ForEachField(on_cell)) {
      if (csv_ && !csv_->status().ok()) {
        errors_.ReportFile(cluster_, kKind, csv_->path(), csv_->status().message());
      }
      if (!OpenNextFile()) break;
      continue;
    }
    if (fields <= time_column) {
      Error("Time", "row has no Time field");
      continue;
    }
    std::optional<int64_t> ts = core::ParseTimeMs(core::TrimSpaces(time_cell));
    if (!ts) {
      Error("Time", "not unix seconds or a time with an offset: " + core::QuotedValue(time_cell));
      continue;
    }
    if (!core::IsTraceTimeMs(*ts)) {
      // Before the order check: a year-9999 row kept would make every later row "go back in time".
      Error("Time", std::string(core::kTraceTimeRangeReason) + ": " + core::QuotedValue(time_cell) + "; row skipped");
      continue;
    }
    if (have_last_ && *ts <= last_ts_ms_) {
      if (*ts == last_ts_ms_ || at_seam_) {
        // The seam between split files repeats rows the previous file already had: keep the first.
        duplicates_dropped_.fetch_add(1, std::memory_order_relaxed);
      } else {
        Error("Time", "goes back in time (" + std::string(time_cell) + "); row skipped");
      }
      continue;
    }
    have_last_ = true;
    at_seam_ = false;
    last_ts_ms_ = *ts;
    if (*ts < range_.from_ms) continue;
    if (*ts >= range_.to_ms) break;
    if (fields != columns) {
      Error("row", "has " + std::to_string(fields) + " fields, header has " + std::to_string(columns) +
                       "; missing cells read as no sample");
    }
    for (const auto& [column, cell] : bad_cells_) {
      Error(header_storage_[column], "not a number: " + cell);
    }
    std::fill(values + std::min(fields, columns), values + columns, core::kNoSample);
    row.ts_ms = *ts;
    std::lock_guard<std::mutex> lock(mutex_);
    row.header = headers_.size() - 1;
    return true;
  }
  if (csv_) {
    bytes_done_ += csv_->bytes_read();
    csv_.reset();
  }
  return false;
}

double UtilizationMetricReader::OtherCell(size_t column, std::string_view cell) {
  if (cell.empty() || column_target_[column] < 0) return core::kNoSample;  // no sample, or not read
  std::optional<double> parsed = core::ParseDouble(cell);
  if (!parsed) bad_cells_.emplace_back(column, core::QuotedValue(cell));  // kept short, as shown
  return parsed.value_or(core::kNoSample);
}

// ---- the calling thread -----------------------------------------------------------------------

void UtilizationMetricReader::MapHeader(size_t index,
                                        const std::function<uint32_t(const std::string&)>& node_index) {
  const Header* header;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    header = &headers_[index];  // a deque's elements stay put as it grows
  }
  mapped_header_ = index;
  gpu_metric_ = header->gpu_metric;
  std::vector<uint32_t> target_node(header->nodes.size());
  gpu_count_.clear();
  for (size_t t = 0; t < header->nodes.size(); ++t) {
    const uint32_t node = node_index(header->nodes[t]);
    target_node[t] = node;
    if (gpu_count_.size() <= node) gpu_count_.resize(node + 1, 0);
    gpu_count_[node] = std::max(gpu_count_[node], header->gpu_count[t]);
  }
  runs_ = header->runs;
  for (Run& run : runs_) run.node = target_node[run.node];
}

bool UtilizationMetricReader::NextRow(const std::function<uint32_t(const std::string&)>& node_index) {
  if (done_) return false;
  if (!started_) {
    started_ = true;
    for (size_t i = 0; i < kMinRowsAhead; ++i) free_.push_back(std::make_unique<ParsedRow>());
    thread_ = std::thread([this] { ReadLoop(); });
  }
  std::unique_ptr<ParsedRow> row;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (full_.empty()) changed_.wait(lock, [this] { return full_.size() >= handover_ || read_done_; });
    if (full_.empty()) {
      done_ = true;
      status_ = read_status_;
      runs_.clear();
      return false;
    }
    row = std::move(full_.front());
    full_.pop_front();
  }
  if (row->header != mapped_header_) MapHeader(row->header, node_index);
  values_.swap(row->values);  // the row takes the previous values' storage back to the reading thread
  ts_ms_ = row->ts_ms;
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(row));
    wake = free_.size() == handover_;
  }
  if (wake) changed_.notify_all();
  return true;
}

// ---------------------------------------------------------------------------------------------

UtilizationSource::UtilizationSource(std::string cluster, const std::vector<std::string>& files,
                                     core::InputErrors& errors, TimeRange range)
    : cluster_(std::move(cluster)) {
  // Group by metric. If METRIC.csv exists, its split files are ignored (as in the release's
  // notebook); split files are read in name order, which is date order.
  std::map<std::string, std::vector<std::string>> whole, split;
  for (const std::string& f : files) {
    std::string metric = MetricNameOfFile(f);
    if (metric.empty()) continue;
    const size_t slash = f.find_last_of('/');
    std::string base = f.substr(slash == std::string::npos ? 0 : slash + 1);
    (base == metric + ".csv" ? whole : split)[metric].push_back(f);
    struct stat st;
    if (::stat(f.c_str(), &st) == 0) bytes_total_ += st.st_size;
  }
  for (auto& [metric, list] : split) {
    if (whole.count(metric) == 0) {
      std::sort(list.begin(), list.end());
      whole[metric] = list;
    }
  }
  for (auto& [metric, list] : whole) {
    metric_names_.push_back(metric);
    readers_.push_back(std::make_unique<UtilizationMetricReader>(cluster_, metric, list, errors, range));
  }
  reader_live_.assign(readers_.size(), true);
}

uint32_t UtilizationSource::NodeIndex(const std::string& name) {
  auto [it, inserted] = node_index_.emplace(name, static_cast<uint32_t>(nodes_.size()));
  if (inserted) {
    NodeState state;
    state.name = name;
    core::UtilSample sample;
    sample.cluster = cluster_;
    sample.node = name;
    state.record = std::move(sample);
    nodes_.push_back(std::move(state));
    order_dirty_ = true;
  }
  return it->second;
}

bool UtilizationSource::BuildBatch() {
  auto index = [this](const std::string& name) { return NodeIndex(name); };
  if (!started_) {
    started_ = true;
    for (size_t r = 0; r < readers_.size(); ++r) reader_live_[r] = readers_[r]->NextRow(index);
  }
  for (;;) {
    int64_t t = std::numeric_limits<int64_t>::max();
    for (size_t r = 0; r < readers_.size(); ++r) {
      if (reader_live_[r]) t = std::min(t, readers_[r]->ts_ms());
    }
    if (t == std::numeric_limits<int64_t>::max()) return false;

    batch_.clear();
    batch_pos_ = 0;
    for (size_t r = 0; r < readers_.size(); ++r) {
      if (!reader_live_[r] || readers_[r]->ts_ms() != t) continue;
      UtilizationMetricReader& reader = *readers_[r];
      // A node's columns are usually adjacent (its 8 GPUs, one run), so the node, its record and
      // its value array are looked up once per node rather than once per column. Readers are
      // taken in turn, so a node's slot for this reader, if any, is the last one it made.
      uint32_t current = std::numeric_limits<uint32_t>::max();
      NodeState* node = nullptr;
      core::UtilSample* sample = nullptr;
      double* values = nullptr;
      const double* row = reader.values();
      for (const UtilizationMetricReader::Run& run : reader.runs()) {
        const double* cells = row + run.column;
        bool any = false;
        for (uint32_t k = 0; k < run.count; ++k) any |= core::IsSample(cells[k]);
        if (!any) continue;  // no sample of this node here: no slot, and no record if none at all
        if (run.node != current) {
          current = run.node;
          node = &nodes_[run.node];
          sample = &std::get<core::UtilSample>(node->record);
          values = nullptr;
          if (!node->touched) {
            node->touched = true;
            node->gpu_used = 0;
            node->gpu_reader = -1;
            node->host_reader = -1;
            sample->host.clear();
            sample->ts_ms = t;
            batch_.push_back(run.node);
          }
        }
        if (run.gpu < 0) {
          if (node->host_reader == static_cast<int32_t>(r)) continue;  // a duplicate column: keep the first
          node->host_reader = static_cast<int32_t>(r);
          sample->host.push_back(core::HostMetric{reader.metric(), cells[0]});
          continue;
        }
        double* to;
        if (node->gpu_reader == static_cast<int32_t>(r)) {
          // This reader's slot of the node exists (the last one made): duplicate columns keep the first value.
          if (values == nullptr) values = sample->gpu[node->gpu_used - 1].values.data();
          to = values + run.gpu;
          for (uint32_t k = 0; k < run.count; ++k) {
            if (!core::IsSample(to[k])) to[k] = cells[k];
          }
          continue;
        }
        node->gpu_reader = static_cast<int32_t>(r);
        if (sample->gpu.size() <= node->gpu_used) sample->gpu.emplace_back();
        core::GpuMetric& m = sample->gpu[node->gpu_used++];
        m.name = reader.metric();
        const size_t count =
            static_cast<size_t>(std::max(reader.GpuCount(run.node), run.gpu + static_cast<int32_t>(run.count)));
        if (m.values.size() != count) m.values.resize(count);
        values = m.values.data();
        std::fill(values, values + run.gpu, core::kNoSample);
        std::copy(cells, cells + run.count, values + run.gpu);
        std::fill(values + run.gpu + run.count, values + count, core::kNoSample);
      }
      reader_live_[r] = reader.NextRow(index);
    }
    if (batch_.empty()) continue;  // a time where every cell was empty
    if (order_dirty_) {
      name_order_.resize(nodes_.size());
      for (uint32_t i = 0; i < nodes_.size(); ++i) name_order_[i] = i;
      std::sort(name_order_.begin(), name_order_.end(),
                [this](uint32_t a, uint32_t b) { return nodes_[a].name < nodes_[b].name; });
      // rank_[i] = position of node i in name order
      rank_.assign(nodes_.size(), 0);
      for (uint32_t pos = 0; pos < name_order_.size(); ++pos) rank_[name_order_[pos]] = pos;
      order_dirty_ = false;
    }
    // Nodes in name order. Usually most nodes report at every time: then one pass over the name
    // order picking the touched nodes is cheaper than sorting the batch.
    if (batch_.size() * 4 >= nodes_.size()) {
      batch_.clear();
      for (uint32_t n : name_order_) {
        if (nodes_[n].touched) batch_.push_back(n);
      }
    } else {
      std::sort(batch_.begin(), batch_.end(), [this](uint32_t a, uint32_t b) { return rank_[a] < rank_[b]; });
    }
    // Metric slots are assigned in reader order within a node, so record metric order is the
    // reader (file-name) order as long as each node's slots were filled in that order.
    for (uint32_t n : batch_) {
      NodeState& node = nodes_[n];
      auto& sample = std::get<core::UtilSample>(node.record);
      sample.gpu.resize(node.gpu_used);
      node.touched = false;
    }
    return true;
  }
}

const core::Record* UtilizationSource::Next() {
  if (batch_pos_ >= batch_.size() && !BuildBatch()) return nullptr;
  return &nodes_[batch_[batch_pos_++]].record;
}

int64_t UtilizationSource::bytes_read() const { return SumOverParts(readers_, &UtilizationMetricReader::bytes_read); }

core::Status UtilizationSource::status() const { return FirstPartError(readers_); }

int64_t UtilizationSource::duplicates_dropped() const {
  return SumOverParts(readers_, &UtilizationMetricReader::duplicates_dropped);
}

}  // namespace acmetrace::producers

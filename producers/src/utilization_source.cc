// Utilization logs: header-driven column mapping and a k-way merge of metric files by Time.
#include "acmetrace/producers/utilization_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>

#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

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

// Utilization cells are short decimals ("57.123", "0.0", "100.0"): about 2,300 of them per row
// and most of the replay's time. core::ParseDouble gives the same value for them, but as an
// out-of-line call returning std::optional<double>, which GCC passes back through memory with a
// store-forwarding stall; parsing them here, inline, took about a quarter off the CPU time of a
// wide-file replay (bench/README.md). Anything this does not take (a sign, an exponent, spaces,
// "nan", more than 8 bytes) goes to core::ParseDouble.
//
// Without a branch per character: the cell's bytes are loaded as one word (CsvReader guarantees
// kFieldPadding readable bytes after every field; the bytes past the cell are masked off), the dot is
// taken out, the digits are padded on the right with '0' to 8 ("57123" -> "57123000") and checked and
// converted 8 at a time. The padding multiplies the mantissa by 10^pad and the divisor takes the same
// factor, so the exact quotient, and hence the correctly rounded double (one IEEE division of two
// exact values), is the one core::ParseDouble (fast_float) returns. Cells come in mixed lengths ("0.0",
// "97.87", "100.0"): one unconditional load instead of a branch on the length saves a misprediction on
// a third of them.
static_assert(core::CsvReader::kFieldPadding >= 8);
bool ParseShortCell(std::string_view cell, double& out) {
  static_assert(std::endian::native == std::endian::little);
  static constexpr double kPowersOfTen[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
  static constexpr uint64_t kLowBytes[9] = {0,          0xFF,           0xFFFF,           0xFFFFFF,
                                            0xFFFFFFFF, 0xFFFFFFFFFF,   0xFFFFFFFFFFFF,   0xFFFFFFFFFFFFFF,
                                            ~0ULL};  // [k]: the low k bytes
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  const char* p = cell.data();
  const size_t n = cell.size();
  if (n - 1 >= 8) return false;  // empty or longer than 8
  uint64_t word;                 // byte i = p[i], bytes n..7 = 0
  std::memcpy(&word, p, 8);
  word &= kLowBytes[n];
  // The first '.' (the zero bytes past n are never '.'); a second one fails the digit check.
  const uint64_t x = word ^ (kOnes * '.');
  const uint64_t dots = (x - kOnes) & ~x & (kOnes * 0x80);
  size_t digits = n;
  size_t scale = 8 - n;  // the power of ten to divide by: fraction digits + padding
  if (dots != 0) {
    const size_t dot = static_cast<size_t>(__builtin_ctzll(dots)) / 8;
    if (dot == 0 || dot + 1 == n) return false;  // ".5", "1.": core::ParseDouble's business
    word = (word & kLowBytes[dot]) | ((word >> 8) & ~kLowBytes[dot]);
    digits = n - 1;
    scale = 8 - dot;
  }
  word |= (kOnes * '0') & ~kLowBytes[digits];
  if (((word & 0xF0F0F0F0F0F0F0F0ULL) | (((word + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) !=
      0x3333333333333333ULL) {
    return false;  // not all digits
  }
  word -= kOnes * '0';  // 8 digit values, the first in the low byte; combine pairs, quads, all
  word = word * 10 + (word >> 8);
  word = (((word & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
          (((word >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
  out = static_cast<double>(static_cast<uint32_t>(word)) / kPowersOfTen[scale];
  return true;
}

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
    std::string_view node = StripPandasDuplicate(name.substr(0, dash));
    return ColumnTarget{std::string(node), std::stoi(std::string(index))};
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

void UtilizationMetricReader::Error(std::string_view field, std::string_view reason) {
  errors_.Report(cluster_, kKind, csv_->path(), csv_->line(), field, reason);
}

// ---- the reading thread -----------------------------------------------------------------------

void UtilizationMetricReader::ReadLoop() {
  for (;;) {
    std::unique_ptr<ParsedRow> row;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (free_.empty()) changed_.wait(lock, [this] { return stop_ || free_.size() >= kHandover; });
      if (stop_) return;
      row = std::move(free_.front());
      free_.pop_front();
    }
    const bool more = ReadRow(*row) && !errors_.must_stop();
    bytes_read_.store(bytes_done_ + (csv_ ? csv_->bytes_read() : 0), std::memory_order_relaxed);
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (more) {
        full_.push_back(std::move(row));
      } else {
        read_done_ = true;
      }
      wake = !more || full_.size() == kHandover;
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
      errors_.ReportFile(cluster_, kKind, path, "cannot open");
      continue;
    }
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
      std::optional<ColumnTarget> target = ParseUtilizationColumn(fields_[i], header.gpu_metric);
      if (!target) {
        errors_.Report(cluster_, kKind, path, 1, header_storage_[i],
                       header.gpu_metric ? "not a GPU column (IP-index or pod-index); column ignored"
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
    }
    std::lock_guard<std::mutex> lock(mutex_);
    headers_.push_back(std::move(header));
    return true;
  }
  return false;
}

bool UtilizationMetricReader::ReadRow(ParsedRow& row) {
  row.cells.clear();
  for (;;) {
    if (!csv_ || !csv_->status().ok() || !csv_->NextRow(fields_)) {
      if (csv_ && !csv_->status().ok()) {
        errors_.ReportFile(cluster_, kKind, csv_->path(), csv_->status().message());
      }
      if (!OpenNextFile()) break;
      continue;
    }
    if (fields_.size() <= static_cast<size_t>(time_column_)) {
      Error("Time", "row has no Time field");
      continue;
    }
    std::optional<int64_t> ts = core::ParseTimeMs(core::TrimSpaces(fields_[time_column_]));
    if (!ts) {
      Error("Time", "not unix seconds or a time with an offset: '" + std::string(fields_[time_column_]) + "'");
      continue;
    }
    if (have_last_ && *ts <= last_ts_ms_) {
      if (*ts == last_ts_ms_ || at_seam_) {
        // The seam between split files repeats rows the previous file already had: keep the first.
        duplicates_dropped_.fetch_add(1, std::memory_order_relaxed);
      } else {
        Error("Time", "goes back in time (" + std::string(fields_[time_column_]) + "); row skipped");
      }
      continue;
    }
    have_last_ = true;
    at_seam_ = false;
    last_ts_ms_ = *ts;
    if (*ts < range_.from_ms) continue;
    if (*ts >= range_.to_ms) break;
    if (fields_.size() != column_target_.size()) {
      Error("row", "has " + std::to_string(fields_.size()) + " fields, header has " +
                       std::to_string(column_target_.size()) + "; missing cells read as no sample");
    }
    const size_t n = std::min(fields_.size(), column_target_.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string_view cell = fields_[i];
      if (cell.empty() || column_target_[i] < 0) continue;
      double v;
      if (!ParseShortCell(cell, v)) {
        std::optional<double> parsed = core::ParseDouble(cell);
        if (!parsed) {
          Error(header_storage_[i], "not a number: '" + std::string(cell) + "'");
          continue;
        }
        v = *parsed;
      }
      if (!core::IsSample(v)) continue;  // "nan" written out: no sample
      row.cells.push_back(Cell{static_cast<uint32_t>(column_target_[i]), column_gpu_[i], v});
    }
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
  target_node_.resize(header->nodes.size());
  gpu_count_.clear();
  for (size_t t = 0; t < header->nodes.size(); ++t) {
    const uint32_t node = node_index(header->nodes[t]);
    target_node_[t] = node;
    if (gpu_count_.size() <= node) gpu_count_.resize(node + 1, 0);
    gpu_count_[node] = std::max(gpu_count_[node], header->gpu_count[t]);
  }
}

bool UtilizationMetricReader::NextRow(const std::function<uint32_t(const std::string&)>& node_index) {
  cells_.clear();
  if (done_) return false;
  if (!started_) {
    started_ = true;
    for (size_t i = 0; i < kRowsAhead; ++i) free_.push_back(std::make_unique<ParsedRow>());
    thread_ = std::thread([this] { ReadLoop(); });
  }
  std::unique_ptr<ParsedRow> row;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (full_.empty()) changed_.wait(lock, [this] { return full_.size() >= kHandover || read_done_; });
    if (full_.empty()) {
      done_ = true;
      status_ = read_status_;
      return false;
    }
    row = std::move(full_.front());
    full_.pop_front();
  }
  if (row->header != mapped_header_) MapHeader(row->header, node_index);
  for (Cell& c : row->cells) c.node = target_node_[c.node];
  cells_.swap(row->cells);  // the row takes the previous cells' storage back to the reading thread
  ts_ms_ = row->ts_ms;
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(row));
    wake = free_.size() == kHandover;
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
    state.gpu_slot.assign(readers_.size(), -1);
    state.host_slot.assign(readers_.size(), -1);
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
      // A node's columns are usually adjacent (its 8 GPUs), so the node, its record and its
      // value array are looked up once per run of cells rather than once per cell. values stays
      // valid within this reader's cells: only a new slot of this node (another reader) could
      // reallocate its gpu list.
      uint32_t current = std::numeric_limits<uint32_t>::max();
      NodeState* node = nullptr;
      core::UtilSample* sample = nullptr;
      double* values = nullptr;
      for (const UtilizationMetricReader::Cell& cell : reader.cells()) {
        if (cell.node != current) {
          current = cell.node;
          node = &nodes_[cell.node];
          sample = &std::get<core::UtilSample>(node->record);
          values = nullptr;
          if (!node->touched) {
            node->touched = true;
            node->gpu_used = 0;
            sample->host.clear();
            sample->ts_ms = t;
            batch_.push_back(cell.node);
          }
        }
        if (cell.gpu < 0) {
          if (node->host_slot[r] >= 0) continue;  // a duplicate column: keep the first value
          node->host_slot[r] = static_cast<int32_t>(sample->host.size());
          sample->host.push_back(core::HostMetric{reader.metric(), cell.value});
          continue;
        }
        if (values == nullptr) {
          int32_t slot = node->gpu_slot[r];
          if (slot < 0) {
            slot = static_cast<int32_t>(node->gpu_used++);
            node->gpu_slot[r] = slot;
            if (sample->gpu.size() < node->gpu_used) sample->gpu.emplace_back();
            core::GpuMetric& m = sample->gpu[slot];
            m.name = reader.metric();
            const size_t count = static_cast<size_t>(std::max(reader.GpuCount(cell.node), cell.gpu + 1));
            if (m.values.size() == count) {
              std::fill(m.values.begin(), m.values.end(), core::kNoSample);  // the usual case, inline
            } else {
              m.values.assign(count, core::kNoSample);
            }
          }
          values = sample->gpu[slot].values.data();
        }
        double& v = values[cell.gpu];
        if (!core::IsSample(v)) v = cell.value;  // duplicate columns: keep the first value
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
      std::fill(node.gpu_slot.begin(), node.gpu_slot.end(), -1);
      std::fill(node.host_slot.begin(), node.host_slot.end(), -1);
    }
    return true;
  }
}

const core::Record* UtilizationSource::Next() {
  if (batch_pos_ >= batch_.size() && !BuildBatch()) return nullptr;
  return &nodes_[batch_[batch_pos_++]].record;
}

int64_t UtilizationSource::bytes_read() const {
  int64_t total = 0;
  for (const auto& r : readers_) total += r->bytes_read();
  return total;
}

core::Status UtilizationSource::status() const {
  for (const auto& r : readers_) {
    if (!r->status().ok()) return r->status();
  }
  return core::Status::Ok();
}

int64_t UtilizationSource::duplicates_dropped() const {
  int64_t total = 0;
  for (const auto& r : readers_) total += r->duplicates_dropped();
  return total;
}

}  // namespace acmetrace::producers

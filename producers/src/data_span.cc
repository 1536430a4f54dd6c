// The end of a data directory's trace time from the tails of its files (a few KiB read per file).
#include "acmetrace/producers/data_span.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <vector>

#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

std::string_view StripCell(std::string_view cell) {
  if (cell.substr(0, 3) == "\xEF\xBB\xBF") cell.remove_prefix(3);  // a BOM before the first header
  cell = core::TrimSpaces(cell);
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = cell.substr(1, cell.size() - 2);
  return cell;
}

bool IsTimeColumn(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kNames = {"Time",       "time",     "TIME",      "submit_time",
                                                             "start_time", "end_time", "fail_time", "stop_time"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {  // CRLF and lone CR end a line too (empty lines are skipped)
      if (i > start) lines.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

std::vector<std::string_view> SplitCommas(std::string_view line) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == ',') {
      cells.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  return cells;
}

}  // namespace

std::optional<int64_t> LastTimeInCsvTail(const std::string& path, int64_t tail_bytes) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return std::nullopt;
  // The header: the first line (a release header is a few thousand node columns at most).
  std::string head;
  size_t header_end = std::string::npos;
  while (header_end == std::string::npos && head.size() < (16u << 20)) {
    char chunk[64 * 1024];
    const size_t n = std::fread(chunk, 1, sizeof(chunk), file.get());
    if (n == 0) break;
    const size_t searched = head.size();
    head.append(chunk, n);
    header_end = head.find_first_of("\r\n", searched);
  }
  if (header_end == std::string::npos) return std::nullopt;  // header only: no rows
  std::vector<size_t> time_columns;
  {
    const std::vector<std::string_view> names = SplitCommas(std::string_view(head).substr(0, header_end));
    for (size_t i = 0; i < names.size(); ++i) {
      if (IsTimeColumn(StripCell(names[i]))) time_columns.push_back(i);
    }
  }
  if (time_columns.empty()) return std::nullopt;
  if (std::fseek(file.get(), 0, SEEK_END) != 0) return std::nullopt;
  const int64_t size = std::ftell(file.get());
  const int64_t from = std::max<int64_t>(static_cast<int64_t>(header_end), size - tail_bytes);
  if (std::fseek(file.get(), from, SEEK_SET) != 0) return std::nullopt;
  std::string tail(static_cast<size_t>(size - from), '\0');
  tail.resize(std::fread(tail.data(), 1, tail.size(), file.get()));
  std::vector<std::string_view> lines = SplitLines(tail);
  // The first line of a tail that starts mid-file is likely cut; the header's end is a line start.
  if (from > static_cast<int64_t>(header_end) && !lines.empty()) lines.erase(lines.begin());
  std::optional<int64_t> last;
  for (std::string_view line : lines) {
    if (line.find('"') != std::string_view::npos) continue;  // quoted commas: not worth parsing for an estimate
    const std::vector<std::string_view> cells = SplitCommas(line);
    for (size_t column : time_columns) {
      if (column >= cells.size()) continue;
      std::optional<int64_t> ts = core::ParseTimeMs(core::TrimSpaces(cells[column]));
      if (ts && (!last || *ts > *last)) last = ts;
    }
  }
  return last;
}

CsvHead ReadCsvHead(const std::string& path, int64_t head_bytes) {
  CsvHead out;
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return out;
  std::string head;
  size_t header_end = std::string::npos;
  while (head.size() < (16u << 20)) {
    char chunk[64 * 1024];
    const size_t n = std::fread(chunk, 1, sizeof(chunk), file.get());
    if (n == 0) break;
    const size_t searched = head.size();
    head.append(chunk, n);
    if (header_end == std::string::npos) header_end = head.find_first_of("\r\n", searched);
    if (header_end != std::string::npos && static_cast<int64_t>(head.size() - header_end) >= head_bytes) break;
  }
  if (header_end == std::string::npos) header_end = head.size();
  const std::vector<std::string_view> names = SplitCommas(std::string_view(head).substr(0, header_end));
  out.columns = static_cast<int>(names.size());
  std::vector<size_t> time_columns;
  for (size_t i = 0; i < names.size(); ++i) {
    if (IsTimeColumn(StripCell(names[i]))) time_columns.push_back(i);
  }
  if (time_columns.empty() || header_end >= head.size()) return out;
  std::string_view rows = std::string_view(head).substr(header_end);
  if (static_cast<int64_t>(rows.size()) > head_bytes) rows = rows.substr(0, static_cast<size_t>(head_bytes));
  std::vector<std::string_view> lines = SplitLines(rows);
  // The last line of a head that stops mid-file may be cut.
  if (rows.size() < head.size() - header_end && !lines.empty()) lines.pop_back();
  for (std::string_view line : lines) {
    if (line.find('"') != std::string_view::npos) continue;
    const std::vector<std::string_view> cells = SplitCommas(line);
    for (size_t column : time_columns) {
      if (column >= cells.size()) continue;
      std::optional<int64_t> ts = core::ParseTimeMs(core::TrimSpaces(cells[column]));
      if (ts && (!out.first_ms || *ts < *out.first_ms)) out.first_ms = ts;
    }
  }
  return out;
}

std::optional<DataSpan> EstimateDataSpan(const DataDirFiles& files) {
  auto span_of = [](const std::vector<std::string>& paths) -> std::optional<DataSpan> {
    std::optional<int64_t> first, last;
    for (const std::string& path : paths) {
      const std::optional<int64_t> f = ReadCsvHead(path).first_ms;
      const std::optional<int64_t> l = LastTimeInCsvTail(path);
      if (f && (!first || *f < *first)) first = f;
      if (l && (!last || *l > *last)) last = l;
    }
    if (!first || !last) return std::nullopt;
    return DataSpan{*first, std::max(*first, *last), true};
  };
  std::vector<std::string> telemetry = files.ipmi;
  for (const auto& [cluster, list] : files.utilization) telemetry.insert(telemetry.end(), list.begin(), list.end());
  if (std::optional<DataSpan> span = span_of(telemetry)) return span;
  std::vector<std::string> jobs;
  for (const auto& [cluster, path] : files.job_traces) jobs.push_back(path);
  std::optional<DataSpan> span = span_of(jobs);
  if (span) span->telemetry = false;
  return span;
}

std::optional<int64_t> EstimateLastTimeMs(const DataDirFiles& files) {
  std::optional<int64_t> last;
  auto take = [&last](const std::string& path) {
    std::optional<int64_t> t = LastTimeInCsvTail(path);
    if (t && (!last || *t > *last)) last = t;
  };
  for (const auto& [cluster, path] : files.job_traces) take(path);
  // Split metric files (METRIC-2023-07.csv, ...) are read in name order: the last of each metric
  // holds its end; taking every file's tail is as cheap and needs no name parsing.
  for (const auto& [cluster, list] : files.utilization) {
    for (const std::string& path : list) take(path);
  }
  for (const std::string& path : files.ipmi) take(path);
  return last;
}

}  // namespace acmetrace::producers

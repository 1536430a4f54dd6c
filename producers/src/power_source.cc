// PowerSource: one cursor per IPMI file, merged by Time.
#include "acmetrace/producers/power_source.h"

#include <sys/stat.h>

#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {
namespace {
constexpr std::string_view kKind = "ipmi";
}  // namespace

std::string PowerModelOfFile(std::string_view file_name) {
  const size_t slash = file_name.find_last_of('/');
  if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  if (file_name.size() > 4 && file_name.substr(file_name.size() - 4) == ".csv") file_name.remove_suffix(4);
  if (file_name.size() > 6 && file_name.substr(file_name.size() - 6) == "_Power") file_name.remove_suffix(6);
  if (file_name == "GPU_AB") return "";
  return std::string(file_name);
}

PowerSource::PowerSource(std::string cluster, const std::vector<std::string>& files,
                         core::InputErrors& errors, TimeRange range)
    : cluster_(std::move(cluster)), errors_(errors), range_(range) {
  for (const std::string& path : files) {
    auto file = std::make_unique<File>();
    file->model = PowerModelOfFile(path);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) bytes_total_ += st.st_size;
    if (core::Status s = file->csv.Open(path); !s.ok()) {
      errors_.ReportFile(cluster_, kKind, path, s.message().substr(path.size() + 2));  // "cannot open: ..."
      continue;
    }
    file->csv.set_error_sink([this, &csv = file->csv](int64_t line, std::string_view field, std::string_view reason) {
      errors_.Report(cluster_, kKind, csv.path(), line, field, reason);
    });
    if (!file->csv.NextRow(file->fields)) {
      errors_.ReportFile(cluster_, kKind, path, "empty file: no header");
      continue;
    }
    for (size_t i = 0; i < file->fields.size(); ++i) {
      std::string_view name = core::TrimSpaces(file->fields[i]);
      if (name == "Time" || name == "time") {
        file->time_column = static_cast<int>(i);
        file->names.push_back("");
        continue;
      }
      if (name.size() > core::kMaxNameBytes) {  // not a power field: ignored, and not kept for good
        errors_.Report(cluster_, kKind, path, 1, name,
                       "column name of " + std::to_string(name.size()) + " bytes, more than " +
                           std::to_string(core::kMaxNameBytes) + "; column ignored");
        file->names.push_back("");
        continue;
      }
      if (name == "MEM_Power") file->mem_power_column = static_cast<int>(i);
      file->names.push_back(core::InternName(name));
    }
    if (file->time_column < 0) {
      errors_.Report(cluster_, kKind, path, 1, "Time", "header has no Time column; file skipped");
      continue;
    }
    auto& sample = std::get<core::PowerSample>(file->record);
    sample.cluster = cluster_;
    file->live = true;
    files_.push_back(std::move(file));
  }
  for (auto& f : files_) f->live = Advance(*f);
}

bool PowerSource::Advance(File& f) {
  auto& sample = std::get<core::PowerSample>(f.record);
  while (f.csv.NextRow(f.fields)) {
    const std::string& path = f.csv.path();
    if (f.fields.size() <= static_cast<size_t>(f.time_column)) {
      errors_.Report(cluster_, kKind, path, f.csv.line(), "Time", "row has no Time field");
      continue;
    }
    std::optional<int64_t> ts = core::ParseTimeMs(core::TrimSpaces(f.fields[f.time_column]));
    if (!ts) {
      errors_.Report(cluster_, kKind, path, f.csv.line(), "Time",
                     "not unix seconds or a time with an offset: " + core::QuotedValue(f.fields[f.time_column]));
      continue;
    }
    if (!core::IsTraceTimeMs(*ts)) {
      errors_.Report(cluster_, kKind, path, f.csv.line(), "Time",
                     std::string(core::kTraceTimeRangeReason) + ": " + core::QuotedValue(f.fields[f.time_column]) +
                         "; row skipped");
      continue;
    }
    if (!range_.Contains(*ts)) {
      if (*ts >= range_.to_ms && *ts >= f.last_ts_ms) return false;
      continue;
    }
    if (*ts < f.last_ts_ms) ++out_of_order_;
    f.last_ts_ms = std::max(f.last_ts_ms, *ts);
    sample.ts_ms = *ts;
    sample.fields.clear();
    const size_t n = std::min(f.fields.size(), f.names.size());
    if (f.fields.size() != f.names.size()) {
      errors_.Report(cluster_, kKind, path, f.csv.line(), "row",
                     "has " + std::to_string(f.fields.size()) + " fields, header has " +
                         std::to_string(f.names.size()));
    }
    for (size_t i = 0; i < n; ++i) {
      if (f.names[i].empty()) continue;
      std::string_view cell = core::TrimSpaces(f.fields[i]);
      if (cell.empty()) continue;
      std::optional<double> v = core::ParseDouble(cell);
      if (!v) {
        // A non-numeric column (a host name, say) is not a power field: ignore it quietly only if
        // it never held numbers; otherwise it is a bad cell.
        errors_.Report(cluster_, kKind, path, f.csv.line(), f.names[i], "not a number: " + core::QuotedValue(cell));
        continue;
      }
      sample.fields.emplace_back(f.names[i], *v);
    }
    if (f.model.empty()) {
      const bool has_mem = f.mem_power_column >= 0 &&
                           static_cast<size_t>(f.mem_power_column) < f.fields.size() &&
                           !core::TrimSpaces(f.fields[f.mem_power_column]).empty();
      sample.model = has_mem ? "GPU_A" : "GPU_B";
    } else {
      sample.model = f.model;
    }
    return true;
  }
  if (!f.csv.status().ok()) errors_.ReportFile(cluster_, kKind, f.csv.path(), f.csv.status().message());
  return false;
}

const core::Record* PowerSource::Next() {
  if (emitted_ != nullptr) {
    emitted_->live = Advance(*emitted_);
    emitted_ = nullptr;
  }
  File* best = nullptr;
  for (auto& f : files_) {
    if (!f->live) continue;
    if (best == nullptr || std::get<core::PowerSample>(f->record).ts_ms <
                               std::get<core::PowerSample>(best->record).ts_ms) {
      best = f.get();
    }
  }
  if (best == nullptr) return nullptr;
  emitted_ = best;
  return &best->record;
}

int64_t PowerSource::bytes_read() const {
  int64_t total = 0;
  for (const auto& f : files_) total += f->csv.bytes_read();
  return total;
}

}  // namespace acmetrace::producers

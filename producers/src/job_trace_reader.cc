// JobTraceReader: header-driven column lookup so both published schemas (and future extra
// columns) read the same way.
#include "acmetrace/producers/job_trace_reader.h"

#include <algorithm>

#include "acmetrace/core/number.h"
#include "acmetrace/core/record.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {
namespace {

constexpr std::string_view kColumnNames[] = {
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
    "start_time", "end_time", "duration", "queue", "gpu_time"};
constexpr std::string_view kKind = "job_trace";

}  // namespace

std::string ClusterFromTraceFileName(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name.size() > 10 && name.substr(0, 6) == "trace_" && name.substr(name.size() - 4) == ".csv") {
    return std::string(name.substr(6, name.size() - 10));
  }
  return "";
}

core::Status JobTraceReader::Open(const std::string& path, std::string cluster) {
  if (core::Status s = csv_.Open(path); !s.ok()) return s;
  csv_.set_error_sink([this](int64_t line, std::string_view field, std::string_view reason) {
    errors_.Report(cluster_, kKind, csv_.path(), line, field, reason);
  });
  if (!csv_.NextRow(fields_)) {
    if (!csv_.status().ok()) return csv_.status();
    return core::Status::Error(path + ": empty file: no header");
  }
  std::fill(std::begin(index_), std::end(index_), -1);
  bool kalos_columns = false;
  for (size_t i = 0; i < fields_.size(); ++i) {
    std::string_view name = core::TrimSpaces(fields_[i]);
    for (int c = 0; c < kColumnCount; ++c) {
      if (name == kColumnNames[c] && index_[c] < 0) index_[c] = static_cast<int>(i);
    }
    if (name == "fail_time" || name == "stop_time") kalos_columns = true;
  }
  std::string missing;
  for (int c = 0; c < kColumnCount; ++c) {
    if (index_[c] < 0) {
      if (!missing.empty()) missing += ", ";
      missing += kColumnNames[c];
    }
    min_fields_ = std::max(min_fields_, static_cast<size_t>(index_[c] + 1));
  }
  if (!missing.empty()) {
    return core::Status::Error(path + ":1: header: not a job trace: missing column(s) " + missing);
  }
  cluster_ = std::move(cluster);
  if (cluster_.empty()) cluster_ = ClusterFromTraceFileName(path);
  if (cluster_.empty()) cluster_ = kalos_columns ? "kalos" : "seren";
  return core::Status::Ok();
}

void JobTraceReader::Error(std::string_view field, std::string_view reason) {
  errors_.Report(cluster_, kKind, csv_.path(), csv_.line(), field, reason);
}

bool JobTraceReader::Next(JobRow& row) {
  while (csv_.NextRow(fields_)) {
    if (ParseRow(fields_, row)) {
      ++rows_;
      return true;
    }
    if (errors_.must_stop()) return false;
  }
  return false;
}

bool JobTraceReader::ParseRow(const std::vector<std::string_view>& f, JobRow& row) {
  if (f.size() < min_fields_) {
    Error("row", "has " + std::to_string(f.size()) + " fields, expected at least " +
                     std::to_string(min_fields_));
    return false;
  }
  auto text = [&](Column c) { return core::TrimSpaces(f[index_[c]]); };
  auto integer = [&](Column c, int64_t& out) {
    std::optional<int64_t> v = core::ParseInteger(text(c));
    if (!v || *v < 0) {
      Error(kColumnNames[c], "not a non-negative integer: " + core::QuotedValue(text(c)));
      return false;
    }
    out = *v;
    return true;
  };
  auto number = [&](Column c, double& out) {
    std::string_view t = text(c);
    if (t.empty()) {  // published as empty (e.g. a job that never ran): no value
      out = core::kNoSample;
      return true;
    }
    std::optional<double> v = core::ParseDouble(t);
    if (!v) {
      Error(kColumnNames[c], "not a number: " + core::QuotedValue(t));
      return false;
    }
    out = *v;
    return true;
  };
  auto time = [&](Column c, std::optional<int64_t>& out) {
    std::string_view t = text(c);
    if (t.empty()) {
      out.reset();
      return true;
    }
    out = core::ParseTimeMs(t);
    if (!out) {
      Error(kColumnNames[c], "not a time with an offset: " + core::QuotedValue(t));
      return false;
    }
    if (!core::IsTraceTimeMs(*out)) {
      Error(kColumnNames[c], std::string(core::kTraceTimeRangeReason) + ": " + core::QuotedValue(t));
      return false;
    }
    return true;
  };

  if (text(kJobId).empty()) {
    Error("job_id", "empty");
    return false;
  }
  for (const Column c : {kJobId, kUser, kType, kState}) {
    if (text(c).size() > core::kMaxNameBytes) {
      Error(kColumnNames[c], "name of " + std::to_string(text(c).size()) + " bytes, more than " +
                                 std::to_string(core::kMaxNameBytes) + ": " + core::QuotedValue(text(c)));
      return false;
    }
  }
  std::optional<int64_t> submit;
  if (!integer(kNodeNum, row.node_num) || !integer(kGpuNum, row.gpu_num) ||
      !integer(kCpuNum, row.cpu_num) || !time(kSubmit, submit) || !time(kStart, row.start_ms) ||
      !time(kEnd, row.end_ms) || !number(kDuration, row.duration_s) ||
      !number(kQueue, row.queue_s) || !number(kGpuTime, row.gpu_time)) {
    return false;
  }
  if (!submit) {
    Error("submit_time", "empty");
    return false;
  }
  if (text(kState).empty()) {
    Error("state", "empty");
    return false;
  }
  row.submit_ms = *submit;
  row.job_id.assign(text(kJobId));
  row.user.assign(text(kUser));
  row.type.assign(text(kType));
  row.state.assign(text(kState));
  return true;
}

}  // namespace acmetrace::producers

// EventStream: directory discovery and a small k-way merge (a handful of sources: a linear scan
// beats a heap here).
#include "acmetrace/producers/event_stream.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "acmetrace/producers/data_span.h"
#include "acmetrace/producers/job_event_source.h"
#include "acmetrace/producers/power_source.h"
#include "acmetrace/producers/utilization_source.h"
#include "parts.h"

namespace acmetrace::producers {
namespace fs = std::filesystem;

namespace {

bool Selected(const std::vector<std::string>& clusters, const std::string& cluster) {
  return clusters.empty() || std::find(clusters.begin(), clusters.end(), cluster) != clusters.end();
}

// The *.csv files in dir; *.csv entries that are not files go to not_files (for a cluster and kind
// the caller names after selecting them).
std::vector<std::string> CsvFilesIn(const fs::path& dir, std::vector<std::string>* not_files) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".csv") continue;
    std::error_code type_ec;
    if (entry.is_regular_file(type_ec)) {
      files.push_back(entry.path().string());
    } else if (not_files != nullptr) {
      not_files->push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  if (not_files != nullptr) std::sort(not_files->begin(), not_files->end());
  return files;
}

std::string NotAFileReason(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? "is a directory, not a file; skipped" : "not a regular file; skipped";
}

}  // namespace

core::Result<DataDirFiles> ListDataDir(const std::string& dir, const std::vector<std::string>& clusters) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return core::Status::Error(dir + ": not a directory (or not readable)");
  // The synth's output directory: dir, or dir/.. when dir is the data directory in it.
  const bool data_given = fs::is_directory(fs::path(dir) / "job_trace", ec) || fs::is_directory(fs::path(dir) / "utilization", ec);
  fs::path out_dir = fs::path(dir).lexically_normal();
  if (!out_dir.has_filename()) out_dir = out_dir.parent_path();  // "x/data/"
  if (data_given) out_dir = out_dir.parent_path();
  for (const fs::path& marked : {fs::path(dir), out_dir}) {
    if (fs::exists(marked / kSynthIncompleteMarker, ec)) {
      return core::Status::Error(dir + ": an acmetrace synth has not finished writing it (stopped or killed mid-write: " +
                                 (marked / kSynthIncompleteMarker).string() + " is there); run synth again");
    }
  }
  fs::path root = fs::path(dir) / "data";
  if (!fs::is_directory(root, ec) && (fs::is_directory(fs::path(dir) / "job_trace", ec) ||
                                      fs::is_directory(fs::path(dir) / "utilization", ec))) {
    root = dir;
  }
  DataDirFiles out;
  out.data_root = root.string();
  std::vector<std::string> odd;
  for (const std::string& f : CsvFilesIn(root / "job_trace", &odd)) {
    const fs::path p(f);
    const std::string name = p.filename().string();
    if (name.rfind("trace_", 0) != 0) continue;
    std::string cluster = name.substr(6, name.size() - 10);
    if (Selected(clusters, cluster)) out.job_traces.emplace_back(cluster, f);
  }
  for (const std::string& f : odd) {
    const std::string name = fs::path(f).filename().string();
    if (name.rfind("trace_", 0) != 0) continue;
    std::string cluster = name.substr(6, name.size() - 10);
    if (Selected(clusters, cluster)) out.not_files.push_back({cluster, "job_trace", f, NotAFileReason(f)});
  }
  const fs::path util = root / "utilization";
  if (fs::is_directory(util, ec)) {
    std::vector<std::string> dirs;
    for (const auto& entry : fs::directory_iterator(util, ec)) {
      if (entry.is_directory()) dirs.push_back(entry.path().filename().string());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const std::string& d : dirs) {
      if (d == "ipmi") continue;
      if (d == "util_pkl") continue;  // the release's pickled CDFs, not logs
      if (!Selected(clusters, d)) continue;
      odd.clear();
      std::vector<std::string> files = CsvFilesIn(util / d, &odd);
      if (!files.empty()) out.utilization.emplace_back(d, std::move(files));
      for (const std::string& f : odd) out.not_files.push_back({d, "utilization", f, NotAFileReason(f)});
    }
    if (Selected(clusters, "seren")) {  // the release's IPMI files are Seren's
      odd.clear();
      out.ipmi = CsvFilesIn(util / "ipmi", &odd);
      for (const std::string& f : odd) out.not_files.push_back({"seren", "ipmi", f, NotAFileReason(f)});
    }
  }
  if (out.job_traces.empty() && out.utilization.empty() && out.ipmi.empty() && out.not_files.empty()) {
    return core::Status::Error(dir + ": no AcmeTrace files found (expected " + out.data_root +
                               "/job_trace/trace_<cluster>.csv or " + out.data_root +
                               "/utilization/<cluster>/*.csv)");
  }
  return out;
}

core::Result<std::unique_ptr<EventStream>> EventStream::Open(const EventStreamOptions& options,
                                                             core::InputErrors& errors) {
  core::Result<DataDirFiles> listed = ListDataDir(options.data_dir, options.clusters);
  if (!listed.ok()) return listed.status();
  const DataDirFiles& files = listed.value();
  for (const DataDirFiles::NotAFile& f : files.not_files) errors.ReportFile(f.cluster, f.kind, f.path, f.reason);
  std::unique_ptr<EventStream> stream(new EventStream());
  for (const auto& [cluster, path] : files.job_traces) {
    auto source = std::make_unique<JobEventSource>(errors, options.range, options.job_reorder_window_ms);
    if (core::Status s = source->Open(path, cluster); !s.ok()) return s;
    stream->sources_.push_back(std::move(source));
  }
  for (const auto& [cluster, list] : files.utilization) {
    stream->sources_.push_back(std::make_unique<UtilizationSource>(cluster, list, errors, options.range));
  }
  const bool ipmi_selected = Selected(options.clusters, options.ipmi_cluster);
  if (!files.ipmi.empty() && ipmi_selected) {
    stream->sources_.push_back(std::make_unique<PowerSource>(options.ipmi_cluster, files.ipmi, errors, options.range));
  }
  if (stream->sources_.empty()) {
    return core::Status::Error(options.data_dir + ": no data for the selected clusters");
  }
  stream->heads_.assign(stream->sources_.size(), nullptr);
  // Progress by trace time: the window is --from/--to where given, else the data's own end.
  constexpr TimeRange kAll;
  if (options.range.from_ms != kAll.from_ms) stream->span_.first_ms = options.range.from_ms;
  stream->span_.last_ms = EstimateLastTimeMs(files);
  if (const std::optional<DataSpan> data = EstimateDataSpan(files); data && data->telemetry) {
    stream->span_.pace_from_ms = std::max(data->first_ms, options.range.from_ms);
  }
  if (options.range.to_ms != kAll.to_ms) {
    const int64_t last_in_range = options.range.to_ms - 1;
    stream->span_.last_ms = std::min(stream->span_.last_ms.value_or(last_in_range), last_in_range);
  }
  return stream;
}

const core::Record* EventStream::Next() {
  if (!started_) {
    started_ = true;
    for (size_t i = 0; i < sources_.size(); ++i) heads_[i] = sources_[i]->Next();
  } else if (emitted_ != SIZE_MAX) {
    heads_[emitted_] = sources_[emitted_]->Next();
  }
  size_t best = SIZE_MAX;
  int64_t best_ts = 0;
  for (size_t i = 0; i < heads_.size(); ++i) {
    if (heads_[i] == nullptr) continue;
    const int64_t ts = core::TimestampMsOf(*heads_[i]);
    if (best == SIZE_MAX || ts < best_ts) {
      best = i;
      best_ts = ts;
    }
  }
  emitted_ = best;
  return best == SIZE_MAX ? nullptr : heads_[best];
}

int64_t EventStream::bytes_read() const { return SumOverParts(sources_, &RecordSource::bytes_read); }

int64_t EventStream::bytes_total() const { return SumOverParts(sources_, &RecordSource::bytes_total); }

core::Status EventStream::status() const { return FirstPartError(sources_); }

int64_t EventStream::out_of_order() const {
  int64_t total = 0;
  for (const auto& s : sources_) {
    if (auto* jobs = dynamic_cast<const JobEventSource*>(s.get())) total += jobs->out_of_order();
  }
  return total;
}

}  // namespace acmetrace::producers

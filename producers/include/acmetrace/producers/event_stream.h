// The whole release as one event-time-ordered stream: job events, utilization samples and IPMI
// power rows of every selected cluster, merged.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/status.h"
#include "acmetrace/producers/record_source.h"

namespace acmetrace::producers {

/// Which files make up a data directory in the release's layout.
struct DataDirFiles {
  std::string data_root;                                  // DIR/data (or DIR if it is already that)
  std::vector<std::pair<std::string, std::string>> job_traces;  // (cluster, path)
  std::vector<std::pair<std::string, std::vector<std::string>>> utilization;  // (cluster, files)
  std::vector<std::string> ipmi;                          // Seren's IPMI power files
  /// Entries named like data files that are not regular files (a directory trace_seren.csv):
  /// counted input errors, not silently missing data.
  struct NotAFile {
    std::string cluster, kind, path, reason;
  };
  std::vector<NotAFile> not_files;
};

/// The file `acmetrace synth` puts into its output directory while it writes, and removes when the
/// data set is complete: a synth killed mid-write leaves it, and readers refuse the directory.
inline constexpr std::string_view kSynthIncompleteMarker = ".acmetrace-synth-incomplete";

/// Lists the AcmeTrace files under dir: dir/data/job_trace/trace_<cluster>.csv,
/// dir/data/utilization/<cluster>/*.csv, dir/data/utilization/ipmi/*.csv ("dir/data" may be
/// given directly). clusters empty = all. A missing directory, one with no AcmeTrace files for
/// the selected clusters, and one a synth has not finished writing (kSynthIncompleteMarker in dir,
/// or in dir/.. when dir is a data directory) are errors.
core::Result<DataDirFiles> ListDataDir(const std::string& dir, const std::vector<std::string>& clusters);

/// Options of the merged stream.
struct EventStreamOptions {
  std::string data_dir;
  std::vector<std::string> clusters;  // empty = all found
  TimeRange range;
  int64_t job_reorder_window_ms = 60'000;
  std::string ipmi_cluster = "seren";  // the release has IPMI files for Seren only
};

/// Merges every source of a data directory by event time. Ties: job events first, then
/// utilization, then power; clusters in name order. Not thread-safe.
class EventStream : public RecordSource {
 public:
  static core::Result<std::unique_ptr<EventStream>> Open(const EventStreamOptions& options,
                                                         core::InputErrors& errors);

  const core::Record* Next() override;
  int64_t bytes_read() const override;
  int64_t bytes_total() const override;
  /// --from and --to where given; the end otherwise estimated from the files' last rows
  /// (EstimateLastTimeMs).
  TraceSpan span() const override { return span_; }
  core::Status status() const override;

  /// Job events that arrived behind the stream by more than the reorder window.
  int64_t out_of_order() const;

 private:
  EventStream() = default;

  std::vector<std::unique_ptr<RecordSource>> sources_;
  std::vector<const core::Record*> heads_;
  size_t emitted_ = SIZE_MAX;  // source whose head was handed out last
  bool started_ = false;
  TraceSpan span_;
};

}  // namespace acmetrace::producers

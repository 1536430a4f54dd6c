// Where a backfill's scrapes end up: OpenMetrics text in a file, or Prometheus TSDB blocks made by
// Prometheus's own backfiller (promtool) chunk by chunk; and the shipped recording rules
// backfilled over those blocks.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/history/backfill.h"
#include "acmetrace/history/subprocess.h"
#include "acmetrace/scoring/rule_file.h"

namespace acmetrace::history {

/// `--openmetrics FILE`: the whole text in one file ("-": stdout). Not thread-safe.
class OpenMetricsFile : public ScrapeOutput {
 public:
  static core::Result<std::unique_ptr<OpenMetricsFile>> Open(const std::string& path);
  ~OpenMetricsFile() override;
  core::Status Scrape(int64_t ts_ms, std::string_view samples) override;
  core::Status Finish() override;

 private:
  OpenMetricsFile(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  std::FILE* file_;
  std::string path_;
};

/// What PromtoolBlocks needs. Value type.
struct BlockOptions {
  std::string promtool = "promtool";
  std::string out_dir;                        // PROMDIR: absent or empty; written only by Commit
  int64_t chunk_ms = 2 * 3'600'000;           // Prometheus's block range: chunks never span two
  int64_t max_chunk_bytes = int64_t{512} << 20;  // a chunk is also cut at a scrape when this big
  int promtool_runs = 2;                      // promtool runs at once, each on its own chunk
  StopRequest* stop = nullptr;                // stops the promtool runs with the backfill
};

/// The chunk files on disk at most at once: one being written, one per promtool run.
inline int64_t MaxChunksOnDisk(const BlockOptions& options) { return options.promtool_runs + 1; }

/// TSDB blocks for out_dir, made aside and moved in at the end: the scrapes go to chunk files in a
/// staging directory next to out_dir (same filesystem: `.NAME.backfill-PID`), cut at every block
/// range boundary (2 h of trace time) and when a chunk grows past max_chunk_bytes; each finished
/// chunk is handed to `promtool tsdb create-blocks-from openmetrics` (up to promtool_runs at once)
/// while the next one is written, so the backfill and promtool share the cores, and memory and disk
/// stay bounded by MaxChunksOnDisk chunks whatever the window. Chunks cover disjoint time ranges, so
/// their blocks never overlap. Commit moves the blocks into out_dir in one rename; without it (a
/// failure, a signal) the destructor stops promtool and removes the staging directory, and out_dir
/// is as it was. Not thread-safe.
class PromtoolBlocks : public ScrapeOutput {
 public:
  /// Checks promtool is there and out_dir is absent or empty, and makes the staging directory. The
  /// staging directories of earlier backfills into the same out_dir that are gone (killed: SIGKILL,
  /// a crash, a reboot, so their destructor never ran) are removed: a live backfill holds a lock on
  /// its directory's `lock` file (one without it, of an older version, counts as gone when no
  /// process has its PID).
  static core::Result<std::unique_ptr<PromtoolBlocks>> Open(BlockOptions options);
  ~PromtoolBlocks() override;
  core::Status Scrape(int64_t ts_ms, std::string_view samples) override;
  /// Ends the last chunk and waits for every promtool run.
  core::Status Finish() override;
  /// After Finish (and the recording rules): the blocks become out_dir; the staging directory goes.
  core::Status Commit();

  /// Where the blocks are until Commit (the recording rules read them and add theirs there).
  std::string blocks_dir() const { return staging_ + "/blocks"; }
  /// The staging directory (next to out_dir), for other work files of the backfill.
  const std::string& staging_dir() const { return staging_; }
  /// What Open removed: "PATH (N MB)" per staging directory of a backfill that is gone.
  const std::vector<std::string>& removed_stale() const { return removed_stale_; }
  int64_t chunks() const { return chunks_; }
  int64_t text_bytes() const { return text_bytes_; }
  /// CPU seconds promtool used (user + system of the finished runs).
  double promtool_cpu_s() const { return promtool_cpu_s_; }
  /// Peak RSS of the largest promtool run, in bytes.
  int64_t promtool_max_rss_bytes() const { return promtool_max_rss_; }

 private:
  explicit PromtoolBlocks(BlockOptions options);
  core::Status CutChunk();
  core::Status WaitForOldestRun();
  std::string chunk_dir() const { return staging_ + "/chunks"; }

  struct Run {
    Subprocess promtool;
    std::string chunk;
  };
  BlockOptions options_;
  std::string staging_;
  std::vector<std::string> removed_stale_;
  int lock_fd_ = -1;  // holds the lock on staging_/lock while this backfill lives
  std::FILE* chunk_ = nullptr;
  std::string chunk_path_;
  int64_t chunk_end_ms_ = 0;  // the block range boundary the open chunk must not reach
  int64_t chunk_bytes_ = 0;
  int64_t chunks_ = 0;
  int64_t text_bytes_ = 0;
  std::deque<Run> running_;  // promtool on the previous chunks, oldest first
  bool committed_ = false;
  double promtool_cpu_s_ = 0;
  int64_t promtool_max_rss_ = 0;
};

/// `promtool check rules` on every rule file (written to work_dir first): the first failure names
/// the file and what promtool said.
core::Status CheckRuleFiles(const std::string& promtool, const std::vector<scoring::RuleFileText>& rules,
                            const std::string& work_dir, StopRequest* stop = nullptr);

/// The bytes free for an unprivileged user on the filesystem holding path.
core::Result<int64_t> FreeDiskBytes(const std::string& path);

/// The number of recording rules (`record:`) in a rule file (error: FILE:LINE: field: reason).
core::Result<int> CountRecordingRules(const scoring::RuleFileText& file);

/// What BackfillRecordingRules needs. Value type.
struct RuleBackfillOptions {
  std::string promtool = "promtool";
  std::string prometheus = "prometheus";
  std::string blocks_dir;       // the blocks the rules read, and where their blocks go
  std::string work_dir;         // for the rules' own work files (removed at the end)
  std::vector<scoring::RuleFileText> rules;
  int64_t from_ms = 0;          // the window the rules are evaluated over
  int64_t to_ms = 0;
  int64_t eval_interval_ms = 15'000;  // for groups without an interval (the shipped global)
  int64_t slice_ms = 86'400'000;      // the window is evaluated a slice at a time (see below)
  StopRequest* stop = nullptr;        // stops the temporary prometheus and promtool with the backfill
  /// Called before each slice: its number (from 1), the number of slices, the slice's start.
  std::function<void(int slice, int slices, int64_t from_ms)> on_slice;
};

/// `promtool tsdb create-blocks-from rules` over the blocks, a slice of the window at a time: for
/// each slice a temporary `prometheus` on 127.0.0.1 (no scrapes, retention long enough to keep every
/// block) serves hard links of only the blocks the slice's rules read (the slice, and before it the
/// longest range or offset the rule files name, plus Prometheus's 5 min lookback; no compaction),
/// promtool evaluates the recording rules through it, and the rules' blocks are moved into
/// blocks_dir at the end. So the
/// memory of the step is bounded by a slice's blocks, whatever the window. Returns the number of
/// recording rules backfilled (0: none in the files, nothing started).
core::Result<int> BackfillRecordingRules(const RuleBackfillOptions& options);

/// A TSDB block directory and the time it holds. Value type.
struct BlockSpan {
  std::filesystem::path dir;
  int64_t min_ms = 0, max_ms = 0;  // meta.json: [minTime, maxTime)
};

/// The TSDB blocks directly under dir (the directories with a meta.json), with the span it gives;
/// other entries are skipped. An error if dir cannot be read or a meta.json gives no span.
core::Result<std::vector<BlockSpan>> ListBlocks(const std::filesystem::path& dir);

/// The span a Prometheus must keep to hold blocks from first_ms to last_ms: Prometheus deletes a
/// block once it is older than the retention counted from the newest block. Whole days, at least
/// one more than the span ("8d").
std::string RetentionFor(int64_t first_ms, int64_t last_ms);

}  // namespace acmetrace::history

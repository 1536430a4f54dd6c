// Where a backfill's scrapes end up: OpenMetrics text in a file, or Prometheus TSDB blocks made by
// Prometheus's own backfiller (promtool) chunk by chunk; and the shipped recording rules
// backfilled over those blocks.
#pragma once

#include <cstdint>
#include <cstdio>
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
  std::string out_dir;                        // PROMDIR: empty or new
  int64_t chunk_ms = 2 * 3'600'000;           // Prometheus's block range: chunks never span two
  int64_t max_chunk_bytes = int64_t{512} << 20;  // a chunk is also cut at a scrape when this big
};

/// TSDB blocks in out_dir: the scrapes go to a chunk file (out_dir/.backfill/), cut at every block
/// range boundary (2 h of trace time) and when it grows past max_chunk_bytes; each finished chunk
/// is handed to `promtool tsdb create-blocks-from openmetrics` while the next one is written, so
/// the backfill and promtool share the cores, and memory and disk stay bounded by two chunks
/// whatever the window. Chunks cover disjoint time ranges, so their blocks never overlap.
/// Not thread-safe.
class PromtoolBlocks : public ScrapeOutput {
 public:
  /// Checks promtool is there and out_dir is empty (or absent: created), and makes the work dir.
  static core::Result<std::unique_ptr<PromtoolBlocks>> Open(BlockOptions options);
  ~PromtoolBlocks() override;
  core::Status Scrape(int64_t ts_ms, std::string_view samples) override;
  core::Status Finish() override;

  int64_t chunks() const { return chunks_; }
  int64_t text_bytes() const { return text_bytes_; }
  /// CPU seconds promtool used (user + system of the finished runs).
  double promtool_cpu_s() const { return promtool_cpu_s_; }
  /// Peak RSS of the largest promtool run, in bytes.
  int64_t promtool_max_rss_bytes() const { return promtool_max_rss_; }

 private:
  explicit PromtoolBlocks(BlockOptions options);
  core::Status CutChunk();
  core::Status WaitForPromtool();
  std::string work_dir() const { return options_.out_dir + "/.backfill"; }

  BlockOptions options_;
  std::FILE* chunk_ = nullptr;
  std::string chunk_path_;
  int64_t chunk_end_ms_ = 0;  // the block range boundary the open chunk must not reach
  int64_t chunk_bytes_ = 0;
  int64_t chunks_ = 0;
  int64_t text_bytes_ = 0;
  std::optional<Subprocess> running_;  // promtool on the previous chunk
  bool created_out_dir_ = false;       // removed again if the backfill fails before a block is written
  bool finished_ = false;
  std::string running_chunk_;
  double promtool_cpu_s_ = 0;
  int64_t promtool_max_rss_ = 0;
};

/// The number of recording rules (`record:`) in a rule file (error: FILE:LINE: field: reason).
core::Result<int> CountRecordingRules(const scoring::RuleFileText& file);

/// What BackfillRecordingRules needs. Value type.
struct RuleBackfillOptions {
  std::string promtool = "promtool";
  std::string prometheus = "prometheus";
  std::string out_dir;          // the blocks the rules read, and where their blocks go
  std::vector<scoring::RuleFileText> rules;
  int64_t from_ms = 0;          // the window the rules are evaluated over
  int64_t to_ms = 0;
  int64_t eval_interval_ms = 15'000;  // for groups without an interval (the shipped global)
  int64_t slice_ms = 86'400'000;      // the window is evaluated a slice at a time (see below)
};

/// `promtool tsdb create-blocks-from rules` over the blocks, a slice of the window at a time: for
/// each slice a temporary `prometheus` on 127.0.0.1 (no scrapes, retention long enough to keep every
/// block) serves hard links of only the blocks the slice's rules read (the slice, and before it the
/// longest range or offset the rule files name, plus Prometheus's 5 min lookback), promtool evaluates
/// the recording rules through it, and the rules' blocks are moved into out_dir at the end. So the
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

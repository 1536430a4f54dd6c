// What the rule phases of a backfill share (blocks.cc, alert_series.cc): a temporary Prometheus
// serving blocks on 127.0.0.1, and writing a small work file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/history/blocks.h"
#include "acmetrace/history/subprocess.h"
#include "acmetrace/scoring/rule_file.h"

namespace acmetrace::history {

/// A temporary prometheus serving storage on a free 127.0.0.1 port (config: scrapes nothing), ready to
/// answer; its port in port_out. Fails if it stops or is not ready after 120 s, naming its log's line.
core::Result<Subprocess> StartReadyPrometheus(const std::string& prometheus, const std::string& config,
                                              const std::filesystem::path& storage, const std::string& retention,
                                              const std::string& log, StopRequest* stop, int& port_out);

/// The two programs of the rule phases, found as FindExecutable finds them.
struct RulePrograms {
  std::string promtool;
  std::string prometheus;
};
/// Finds promtool and prometheus; the error for a missing prometheus says it serves the rules `purpose`
/// (e.g. "recording rules are backfilled").
core::Result<RulePrograms> FindRulePrograms(const std::string& promtool, const std::string& prometheus,
                                            std::string_view purpose);

/// One slice [from_ms, to_ms] of a rule phase's window. Value type.
struct WindowSlice {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
};
/// [from_ms, to_ms] cut into slices of slice_ms (at least a minute), in order, covering it; a remainder of
/// at most one evaluation goes with the slice before it (promtool needs start < end).
std::vector<WindowSlice> SliceWindow(int64_t from_ms, int64_t to_ms, int64_t slice_ms, int64_t eval_interval_ms);

/// How far before a slice its rules read: the longest range selector or offset the rule files name,
/// plus Prometheus's 5 min lookback for instant vectors.
int64_t RuleLookbackMs(const std::vector<scoring::RuleFileText>& files);

/// Empties storage and hard-links into it the blocks holding samples after from_ms up to to_ms, the
/// blocks a slice's rules read; returns how many.
core::Result<int> LinkBlocksOfSpan(const std::vector<BlockSpan>& blocks, int64_t from_ms, int64_t to_ms,
                                   const std::filesystem::path& storage);

/// Moves the blocks promtool wrote into from_dir into blocks_dir, where they join the trace's.
core::Status MoveBlocks(const std::filesystem::path& from_dir, const std::filesystem::path& blocks_dir);

/// Writes text to path (replacing it); the error names the path.
core::Status WriteFile(const std::string& path, std::string_view text);

}  // namespace acmetrace::history

// What the rule phases of a backfill share (blocks.cc, alert_series.cc): a temporary Prometheus
// serving blocks on 127.0.0.1, and writing a small work file.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "acmetrace/core/status.h"
#include "acmetrace/history/subprocess.h"

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

/// Writes text to path (replacing it); the error names the path.
core::Status WriteFile(const std::string& path, std::string_view text);

}  // namespace acmetrace::history

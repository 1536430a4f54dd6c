// The process_* series every Prometheus client library exports (CPU, memory, file descriptors,
// start time; read from /proc on each scrape as client_golang's process collector does) and
// acmetrace_build_info.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "acmetrace/core/status.h"

namespace acmetrace::exporters {

/// What the process_* series report. Value type.
struct ProcessStats {
  double cpu_seconds = 0;         // user + system
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;  // unix seconds
  int64_t open_fds = 0;
  int64_t max_fds = 0;            // the soft limit (RLIMIT_NOFILE)
};

/// Fills cpu_seconds, resident_bytes, virtual_bytes and start_time_seconds from the text of
/// /proc/PID/stat (fields utime, stime, starttime, vsize, rss), given the clock ticks per second,
/// the page size and the boot time (unix seconds). An error names the field that is missing.
core::Status ParseProcStat(std::string_view stat_text, int64_t ticks_per_second, int64_t page_size,
                           double boot_time_seconds, ProcessStats& out);
/// The soft "Max open files" of /proc/PID/limits ("unlimited" gives 0, as client_golang does not
/// report it either).
core::Result<int64_t> ParseMaxOpenFiles(std::string_view limits_text);
/// The "btime" line of /proc/stat: boot time, unix seconds.
core::Result<double> ParseBootTime(std::string_view proc_stat_text);

/// Reads the stats of this process from proc_dir (/proc/self) and /proc/stat.
core::Result<ProcessStats> ReadProcessStats(const std::string& proc_dir = "/proc/self",
                                            const std::string& proc_stat = "/proc/stat");

/// Appends the process_* families (text format, client_golang's names and help).
void AppendProcessMetrics(std::string& out, const ProcessStats& stats);

/// The build: version (CMake project VERSION), git revision at build time ("unknown" outside a
/// checkout, or in a program that did not set it), compiler. Value type over static strings.
struct BuildInfo {
  std::string_view version;
  std::string_view revision;
  std::string_view compiler;
};
/// The acmetrace binary sets the revision it was built from (a string with static storage) at
/// start-up, before any thread runs; GetBuildInfo is read-only after that.
void SetBuildRevision(std::string_view revision);
const BuildInfo& GetBuildInfo();
/// Appends acmetrace_build_info{version,revision,compiler} 1.
void AppendBuildInfo(std::string& out);

}  // namespace acmetrace::exporters

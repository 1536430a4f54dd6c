// The ground truth and the other side of the comparison: incidents from synth's faults.csv, and
// acmetrace's own anomaly flags (acme.anomalies records of `process`) as firing intervals.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/scoring/alert_state.h"

namespace acmetrace::scoring {

/// How severe an incident is, for rules in severity tiers (faults.csv's `severity` column): a rule
/// labelled severity="critical" is scored only on the incidents of its kinds not marked warning.
enum class IncidentSeverity : uint8_t {
  kUntiered,  // empty cell, or a five-column file: every rule of its kind is scored on it
  kWarning,   // a warning rule should catch it, a critical rule need not (an overheat short of 90 C)
  kCritical,  // every rule of its kind should catch it (a hardware XID, an overheat at 90 C or more)
};
/// "", "warning", "critical": as faults.csv writes it.
std::string_view SeverityName(IncidentSeverity severity);

/// One incident of faults.csv: [start_ms, end_ms] of kind on subject (a GPU "node-index", a node, a
/// job id or the cluster; empty: unknown, any subject of that kind and cluster). Value type.
struct Incident {
  std::string cluster;
  std::string kind;
  std::string subject;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  IncidentSeverity severity = IncidentSeverity::kUntiered;
};

/// The longest faults.csv line read (a row is six short fields).
inline constexpr size_t kMaxFaultsLineBytes = 64 * 1024;

/// Reads faults.csv ("cluster,kind,subject,start,end[,severity]", header optional; times in unix
/// seconds or ISO 8601 with an offset; severity warning, critical or empty), sorted by start. Files of
/// five columns (before severity) read as incidents of no tier. RFC 4180 quoted cells, a UTF-8 BOM and
/// CRLF line ends are read (core::CsvReader); an empty subject is an incident whose subject is unknown.
/// A bad row is an error "FILE:LINE: field: reason" (the value echoed cut, core::QuotedValue); a
/// directory or an empty file is an error too (a header alone is a file of no incident).
core::Result<std::vector<Incident>> LoadFaultsCsv(const std::string& path);

/// The flags of one detector kind read from an anomalies file. Value type.
struct FlagKind {
  std::string kind;
  std::vector<FiringInterval> intervals;  // labels cluster, kind, subject
};

/// Reads acme.anomalies records (JSON lines, framed as `process --sink stdout` writes them, or bare
/// record values); records of other topics are skipped. A flag opens at its "open" record and ends at
/// the next "close" of the same cluster/kind/subject, or stays open until end_ms. Flags opened
/// before start_ms are left out (they were firing before the window). A malformed line is an error
/// "FILE:LINE: field: reason". Kinds come sorted. A record read again (same cluster, kind, subject,
/// state and ts_ms: Kafka delivers at least once) is skipped and counted in *duplicates if given.
core::Result<std::vector<FlagKind>> LoadAnomalyFlags(const std::string& path, int64_t start_ms, int64_t end_ms,
                                                     int64_t* duplicates = nullptr);

}  // namespace acmetrace::scoring

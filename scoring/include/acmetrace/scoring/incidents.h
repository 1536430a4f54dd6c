// The ground truth and the other side of the comparison: incidents from synth's faults.csv, and
// acmetrace's own anomaly flags (acme.anomalies records of `process`) as firing intervals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/scoring/alert_state.h"

namespace acmetrace::scoring {

/// One incident of faults.csv: [start_ms, end_ms] of kind on subject (a GPU "node-index", a node, a
/// job id or the cluster). Value type.
struct Incident {
  std::string cluster;
  std::string kind;
  std::string subject;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
};

/// Reads faults.csv ("cluster,kind,subject,start,end", header optional; times in unix seconds or ISO
/// 8601 with an offset), sorted by start. A bad row is an error "FILE:LINE: field: reason".
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
/// "FILE:LINE: field: reason". Kinds come sorted.
core::Result<std::vector<FlagKind>> LoadAnomalyFlags(const std::string& path, int64_t start_ms, int64_t end_ms);

}  // namespace acmetrace::scoring

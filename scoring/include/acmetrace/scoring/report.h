// The three views of a score run: the text table (stdout), the JSON document (--json) and the
// self-contained HTML page with a timeline per cluster (--html). docs/monitoring.md describes them.
#pragma once

#include <string>

#include "acmetrace/scoring/score_run.h"

namespace acmetrace::scoring {

/// A table per rule (onsets, false alerts, precision, caught/total and recall, time to detect, caught
/// by kind), the total of the set, and the sweep if any.
std::string FormatTable(const ScoreReport& report);

/// The JSON document: {"window", "rules": [...], "total", "flags_total"?, "sweep", "warnings"}.
std::string FormatJson(const ScoreReport& report);

/// One HTML page, no scripts and nothing fetched at view time: the table, a timeline per cluster
/// (incidents as bands, each rule's firing intervals as bars) and the list of incidents.
std::string FormatHtml(const ScoreReport& report);

}  // namespace acmetrace::scoring

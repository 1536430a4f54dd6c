// The alerting rules' own series in history mode: ALERTS and ALERTS_FOR_STATE as Prometheus's rule
// manager writes them, evaluated over the backfilled blocks the way `acmetrace score` evaluates the
// rules (one range query per rule, Prometheus's state machine: scoring/alert_state.h), and turned
// into blocks by promtool. Grafana's alert-list panels and ALERTS annotations then show the trace's
// firings at their 2023 times.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/history/subprocess.h"
#include "acmetrace/scoring/alert_state.h"
#include "acmetrace/scoring/rule_file.h"

namespace acmetrace::history {

/// Appends the samples Prometheus writes for one alert at one evaluation at which it is active:
/// ALERTS{labels, alertstate="pending"|"firing"} 1 and ALERTS_FOR_STATE{labels} = activeAt in unix
/// seconds (rules/alerting.go), as OpenMetrics lines stamped with the evaluation's time.
void AppendAlertSamples(std::string& out, const scoring::Labels& labels, const scoring::AlertEvaluation& evaluation);

/// What BackfillAlerts needs. Value type.
struct AlertBackfillOptions {
  std::string promtool = "promtool";
  std::string prometheus = "prometheus";
  std::string blocks_dir;  // the blocks the rules read (recording rules' included), and where ALERTS' go
  std::string work_dir;    // for its own work files (removed at the end)
  std::vector<scoring::RuleFileText> rules;
  int64_t from_ms = 0;  // the window the rules are evaluated over (each on its group's interval grid)
  int64_t to_ms = 0;
  int64_t eval_interval_ms = 15'000;  // for groups without an interval (the shipped global)
  int64_t slice_ms = 86'400'000;      // the window is evaluated a slice at a time (see below)
  StopRequest* stop = nullptr;
  /// Called before each slice: its number (from 1), the number of slices, the slice's start.
  std::function<void(int slice, int slices, int64_t from_ms)> on_slice;
};

/// What BackfillAlerts wrote.
struct AlertBackfillStats {
  int rules = 0;          // alerting rules evaluated
  int64_t samples = 0;    // ALERTS and ALERTS_FOR_STATE samples
  int64_t firings = 0;    // firing spells (onsets)
};

/// Asks each alerting rule's expression over the window (query_range at its group's interval) a slice
/// at a time, each slice through a temporary `prometheus` on 127.0.0.1 serving hard links of only the
/// blocks the slice reads (as BackfillRecordingRules does: the memory is bounded by a slice, whatever
/// the window), replays Prometheus's state machine (for:, keep_firing_for) with each alert's state
/// carried from one slice to the next (so the slices write what the whole window would), and writes
/// ALERTS and ALERTS_FOR_STATE through `promtool tsdb create-blocks-from openmetrics` into blocks_dir.
/// Without alerting rules nothing is started. The error names the rule whose query failed.
core::Result<AlertBackfillStats> BackfillAlerts(const AlertBackfillOptions& options);

}  // namespace acmetrace::history

// One `acmetrace score` run: evaluates each alerting rule over the window (one range query per rule,
// replayed through the state machine), adds acmetrace's anomaly flags, scores all of them against the
// incidents, and the `for:` sweep.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/scoring/baseline.h"
#include "acmetrace/scoring/matcher.h"
#include "acmetrace/scoring/range_query.h"
#include "acmetrace/scoring/rule_file.h"

namespace acmetrace::scoring {

/// The anomaly kinds acmetrace's detectors flag (docs/processors.md): a rule's kind="X" matcher is
/// taken for an incident kind only if X is one of these or appears in the faults file.
const std::set<std::string>& DetectorKinds();

/// What to score and how. Value type.
struct ScoreOptions {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  MatchWindow window;
  std::vector<int64_t> sweep_for_ms;  // --sweep-for: each rule again at each for: value
};

/// One rule at one `for:` value of the sweep. Value type.
struct SweepRow {
  RuleScore score;  // score.for_ms is the swept value
};

/// Where the reports link to, for a look at an incident or a false alert. Value type.
struct ReportLinks {
  std::string prometheus;  // base URL of the server's /graph page ("": no links)
  std::string grafana;     // base URL of a Grafana, for /explore links ("": none)
  std::string grafana_datasource = "prometheus";  // the uid of its Prometheus data source
};

/// Everything the reports show. Value type.
struct ScoreReport {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  MatchWindow window;
  std::vector<Incident> incidents;  // those starting in [from, to]
  int64_t incidents_outside = 0;    // left out: starting outside the window
  std::vector<RuleFirings> firings;  // the rules in file order, then the flags by kind
  std::vector<RuleScore> scores;     // one per firings entry
  RuleScore total;                   // of the rules (of the flags when there are no rules)
  std::optional<RuleScore> flags_total;  // of the flags, when rules are scored too
  std::vector<SweepRow> sweep;
  std::vector<std::string> warnings;     // e.g. an alert using a recording rule's series
  int64_t bad_samples = 0;               // samples of the answers left out (RangeAnswer::bad_samples)
  ReportLinks links;                     // set by the caller
  std::optional<Baseline> baseline;      // --baseline: the scorecard to compare with
};

/// Checks the window before any query: --from and --to within the trace's years (core::IsTraceTimeMs),
/// --to after --from, and each rule evaluated at most kMaxEvaluationsPerRule times over it. The error
/// names the flag (and the rule).
core::Status CheckScoreWindow(const RuleSet& rules, int64_t from_ms, int64_t to_ms);

/// Scores the rules (querying `querier`, which may be null when there are no rules) and the flags
/// against the incidents. progress, if set, is told about each rule as it is queried. An error is a
/// failed query (naming the rule, file and line).
core::Result<ScoreReport> ScoreRules(const RuleSet& rules, RangeQuerier* querier, std::vector<FlagKind> flags,
                                     const std::vector<Incident>& incidents, const ScoreOptions& options,
                                     const std::function<void(const AlertRule&)>& progress = nullptr);

}  // namespace acmetrace::scoring

// The run: rules queried one by one (each answer kept only while its sweep runs), flags added, scores.
#include "acmetrace/scoring/score_run.h"

#include "acmetrace/core/time.h"

namespace acmetrace::scoring {

const std::set<std::string>& DetectorKinds() {
  static const std::set<std::string> kKinds = {"gpu_overheat", "xid_error",     "telemetry_gap",
                                               "gpu_straggler", "util_drop",    "failure_burst",
                                               "queue_backlog", "large_job_failure", "node_failure"};
  return kKinds;
}

core::Status CheckScoreWindow(const RuleSet& rules, int64_t from_ms, int64_t to_ms) {
  for (const auto& [ms, name] : {std::pair{from_ms, "--from"}, std::pair{to_ms, "--to"}}) {
    if (!core::IsTraceTimeMs(ms)) {
      return core::Status::Error(std::string(name) + ": " + core::FormatIsoTime(ms, 0) + " is " +
                                 std::string(core::kTraceTimeRangeReason) + " of the trace");
    }
  }
  if (to_ms <= from_ms) return core::Status::Error("--to must be after --from");
  for (const AlertRule& rule : rules.alerts) {
    const int64_t evaluations = (to_ms - from_ms) / rule.interval_ms + 1;
    if (evaluations > kMaxEvaluationsPerRule) {
      return core::Status::Error(
          "--from, --to: " + rule.file + ":" + std::to_string(rule.line) + ": " + rule.name + " would be evaluated " +
          std::to_string(evaluations) + " times at its interval of " + FormatDuration(rule.interval_ms) +
          ", more than " + std::to_string(kMaxEvaluationsPerRule) + ": narrow the window");
    }
  }
  return core::Status::Ok();
}

core::Result<ScoreReport> ScoreRules(const RuleSet& rules, RangeQuerier* querier, std::vector<FlagKind> flags,
                                     const std::vector<Incident>& incidents, const ScoreOptions& options,
                                     const std::function<void(const AlertRule&)>& progress) {
  ScoreReport report;
  report.from_ms = options.from_ms;
  report.to_ms = options.to_ms;
  report.window = options.window;
  for (const Incident& i : incidents) {
    if (i.start_ms >= options.from_ms && i.start_ms <= options.to_ms) {
      report.incidents.push_back(i);
    } else {
      ++report.incidents_outside;
    }
  }
  std::set<std::string> known_kinds = DetectorKinds();
  for (const Incident& i : report.incidents) known_kinds.insert(i.kind);
  if (!rules.alerts.empty() && querier == nullptr) return core::Status::Error("no Prometheus to query the rules with");

  // The recording rules the alerts use, asked of the server once: a series that is there (recorded
  // live, or backfilled) is no cause for a warning.
  std::set<std::string> used_records;
  for (const AlertRule& rule : rules.alerts) {
    for (std::string& used : RecordingRulesUsed(rule, rules)) used_records.insert(std::move(used));
  }
  std::set<std::string> present;
  std::string not_checked;
  if (!used_records.empty()) {
    core::Result<std::set<std::string>> got = querier->MetricNamesPresent(
        std::vector<std::string>(used_records.begin(), used_records.end()), options.from_ms, options.to_ms);
    if (got.ok()) {
      present = std::move(got).value();
    } else {
      not_checked = " (whether it is could not be checked: " + got.status().message() + ")";
    }
  }
  std::vector<RuleScore> rule_scores;
  for (const AlertRule& rule : rules.alerts) {
    if (progress) progress(rule);
    for (const std::string& used : RecordingRulesUsed(rule, rules)) {
      if (present.count(used) > 0) continue;
      report.warnings.push_back(rule.file + ":" + std::to_string(rule.line) + ": " + rule.name + " uses " + used +
                                ", a recording rule " +
                                (not_checked.empty() ? "with no series on the server over the window" + not_checked
                                                     : "whose series must be on the server" + not_checked) +
                                ": record it live, or backfill it (acmetrace backfill does the shipped ones), "
                                "else the alert never fires");
    }
    core::Result<RangeAnswer> answer =
        querier->QueryRange(rule.expr, options.from_ms, options.to_ms, rule.interval_ms);
    if (!answer.ok()) {
      return core::Status::Error(rule.file + ":" + std::to_string(rule.line) + ": " + rule.name + ": " +
                                 answer.status().message());
    }
    const std::vector<Series>& result = answer.value().series;
    if (answer.value().bad_samples > 0) {
      report.bad_samples += answer.value().bad_samples;
      report.warnings.push_back(rule.file + ":" + std::to_string(rule.line) + ": " + rule.name + ": " +
                                std::to_string(answer.value().bad_samples) +
                                " samples of Prometheus's answers left out, their time being no evaluation time "
                                "(first: " + answer.value().first_bad_sample + ")");
    }
    EvalSchedule schedule{options.from_ms, options.to_ms, rule.interval_ms, rule.for_ms, rule.keep_firing_for_ms};
    RuleFirings firings;
    firings.rule = rule.name;
    firings.group = rule.group;
    firings.expr = rule.expr;
    firings.file = rule.file;
    firings.line = rule.line;
    firings.kinds = KindsOfRule(rule, known_kinds);
    firings.critical = IsCriticalRule(rule);
    firings.for_ms = rule.for_ms;
    firings.keep_firing_for_ms = rule.keep_firing_for_ms;
    firings.interval_ms = rule.interval_ms;
    firings.intervals = ReplayAlertRule(result, rule, schedule);
    rule_scores.push_back(ScoreRule(firings, report.incidents, options.window));
    for (int64_t for_ms : options.sweep_for_ms) {
      RuleFirings swept = firings;
      swept.for_ms = for_ms;
      schedule.for_ms = for_ms;
      swept.intervals = ReplayAlertRule(result, rule, schedule);
      report.sweep.push_back({ScoreRule(swept, report.incidents, options.window)});
    }
    report.firings.push_back(std::move(firings));
  }
  std::vector<RuleScore> flag_scores;
  for (FlagKind& kind : flags) {
    RuleFirings firings;
    firings.rule = "flag:" + kind.kind;
    firings.group = "acmetrace-flags";
    firings.source = "flag";
    firings.kinds = {kind.kind};
    firings.intervals = std::move(kind.intervals);
    flag_scores.push_back(ScoreRule(firings, report.incidents, options.window));
    report.firings.push_back(std::move(firings));
  }
  if (!rule_scores.empty() || flag_scores.empty()) {
    report.total = ScoreSet("all rules", rule_scores, report.incidents);
    if (!flag_scores.empty()) {
      report.flags_total = ScoreSet("all flags", flag_scores, report.incidents);
      report.flags_total->source = "flag";
    }
  } else {
    report.total = ScoreSet("all flags", flag_scores, report.incidents);
    report.total.source = "flag";
  }
  report.scores = std::move(rule_scores);
  for (RuleScore& s : flag_scores) report.scores.push_back(std::move(s));
  return report;
}

}  // namespace acmetrace::scoring

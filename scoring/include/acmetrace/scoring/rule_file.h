// Prometheus alerting-rule files as `acmetrace score` evaluates them: groups, interval, expr, for,
// keep_firing_for and labels (annotations are read and ignored), with Prometheus's duration syntax.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::scoring {

/// Label names to values, sorted: an alert's identity. Value type.
using Labels = std::map<std::string, std::string>;

/// Prometheus's global evaluation_interval default, used for a group without `interval`.
inline constexpr int64_t kDefaultEvaluationIntervalMs = 60'000;
/// The shortest group `interval` accepted: below it a window of hours is millions of evaluations.
inline constexpr int64_t kMinGroupIntervalMs = 1'000;
/// The largest rule file read (the shipped ones are a few KiB): what is bigger is refused unread.
inline constexpr int64_t kMaxRuleFileBytes = 4 << 20;

/// One `alert:` rule of a group. Value type.
struct AlertRule {
  std::string name;   // the alert: field (also the alertname label)
  std::string group;  // the group's name
  std::string file;
  int line = 0;       // 1-based line of the rule in its file
  std::string expr;
  int64_t for_ms = 0;
  int64_t keep_firing_for_ms = 0;
  int64_t interval_ms = kDefaultEvaluationIntervalMs;  // the group's interval
  Labels labels;      // the rule's labels: (templates are not expanded)
};

/// A `record:` rule: not scored, but an alert using its series needs them in Prometheus. Value type.
struct RecordingRule {
  std::string name;
  std::string group;
  std::string file;
  int line = 0;
};

/// The rules of one or more files, in file order. Value type.
struct RuleSet {
  std::vector<AlertRule> alerts;
  std::vector<RecordingRule> records;
};

/// Parses a Prometheus duration ("1m30s", "1h", "0s", "0", "2d", "500ms": units y w d h m s ms, each
/// at most once, largest first) into milliseconds; the error says why (for "FILE:LINE: for: ...").
core::Result<int64_t> ParseDurationMs(std::string_view text);

/// Formats milliseconds back the way Prometheus prints durations: "1m30s", "0s", "1h", "250ms".
std::string FormatDuration(int64_t ms);

/// Loads the groups of one rule file and appends its rules to `out`. default_interval_ms stands for a
/// group without `interval`. Errors read "FILE:LINE: field: reason" (YAML syntax, a missing, unknown
/// or repeated field, a key that is not a plain name, a group name repeated in the file, an interval
/// under kMinGroupIntervalMs, a bad duration, a recording rule or label name Prometheus refuses); the
/// first one is returned, on one line, and nothing is appended then. Never throws.
core::Status LoadRuleFile(const std::string& path, RuleSet& out,
                          int64_t default_interval_ms = kDefaultEvaluationIntervalMs);

/// The incident kinds a rule speaks for: its `kind` label if it has one, else the values of the
/// kind="X" and kind=~"X|Y" matchers of its expression, kept only if they are in known_kinds (so a
/// job metric's kind="gpu" is not taken for an incident kind). Empty: a rule of no kind.
std::set<std::string> KindsOfRule(const AlertRule& rule, const std::set<std::string>& known_kinds);

/// True if the rule is labelled severity="critical": the top of a severity tier, scored only on the
/// incidents not marked warning (matcher.h, ScoredOn).
bool IsCriticalRule(const AlertRule& rule);

/// Names of recording rules that an alert's expression uses (a plain substring test on metric-name
/// boundaries), so the command can warn that their series must exist in Prometheus.
std::vector<std::string> RecordingRulesUsed(const AlertRule& rule, const RuleSet& rules);

/// A rule file's name (as errors name it) and text. Value type.
struct RuleFileText {
  std::string name;
  std::string text;
};
/// Reads a rule file: a regular file of at most kMaxRuleFileBytes (error: "FILE: cannot open the rule
/// file: REASON", "FILE: not a regular file, ...").
core::Result<RuleFileText> ReadRuleFile(const std::string& path);
/// LoadRuleFile on text already read (the shipped rules, built in).
core::Status LoadRuleText(const RuleFileText& file, RuleSet& out,
                          int64_t default_interval_ms = kDefaultEvaluationIntervalMs);
/// The shipped rule files, configs/prometheus/rules/*.yml as built into the binary (sorted by name):
/// the default rules of score and backfill, wherever the binary runs.
const std::vector<RuleFileText>& ShippedRules();

}  // namespace acmetrace::scoring

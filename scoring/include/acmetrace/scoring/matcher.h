// The scoring protocol (docs/monitoring.md, "Scoring alert rules"): an alert's onset detects an
// incident when it falls in [start - 2 min, end + 10 min] and its labels agree with the incident.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "acmetrace/scoring/alert_state.h"
#include "acmetrace/scoring/incidents.h"

namespace acmetrace::scoring {

/// How far before an incident's start and after its end an onset still detects it. Value type.
struct MatchWindow {
  int64_t before_ms = 2 * 60'000;
  int64_t after_ms = 10 * 60'000;
};

/// What one rule (or one detector kind of acmetrace's flags) did over the window. Value type.
struct RuleFirings {
  std::string rule;
  std::string group;
  std::string source = "rule";  // "rule" (Prometheus alerting rule) or "flag" (acmetrace's anomaly flags)
  std::string expr;             // the rule's expression (empty for flags)
  std::string file;             // where the rule is written (empty for flags)
  int line = 0;
  std::set<std::string> kinds;  // the incident kinds it speaks for; empty: every kind
  bool critical = false;        // labelled severity="critical": scored only on incidents not marked warning
  int64_t for_ms = 0;
  int64_t keep_firing_for_ms = 0;
  int64_t interval_ms = 0;
  std::vector<FiringInterval> intervals;
};

/// True if a rule of these kinds (empty: every kind) and tier is scored on the incident: the incident's
/// kind is among them, and the rule is not critical or the incident is not marked warning (a critical
/// rule is not expected to catch an overheat that never reached 90 C, nor an application XID).
bool ScoredOn(const std::set<std::string>& rule_kinds, bool critical, const Incident& incident);

/// The subject an alert names: its `subject` label, else Hostname (or hostname, node) followed by
/// "-" and its `gpu` label if it has one (the "node-index" of a GPU in faults.csv). Empty: none.
std::string AlertSubject(const Labels& labels);

/// True if an alert with these labels, of a rule speaking for rule_kinds, starting to fire at
/// onset_ms, detects the incident: onset in [start - before, end + after]; `cluster` equal if the
/// alert has one; `kind` equal if the alert has one, else the incident's kind among rule_kinds
/// (unless empty); the subject equal to the incident's, or the alert's node equal to it (a node
/// incident seen on one of its GPUs), if the alert names a subject and the incident has one (an
/// incident of unknown subject is detected by an alert on any subject).
bool Detects(const Labels& labels, int64_t onset_ms, const std::set<std::string>& rule_kinds, const Incident& incident,
             const MatchWindow& window);

/// One incident as a rule saw it. Value type.
struct IncidentOutcome {
  size_t incident = 0;  // index into the incidents
  bool caught = false;
  std::optional<int64_t> ttd_ms;  // first detecting onset - start (negative: before the start)
};

/// Caught / total incidents of one kind. Value type.
struct KindCount {
  int64_t caught = 0;
  int64_t total = 0;
};

/// The score of one rule, or of a whole set. Value type.
struct RuleScore {
  std::string rule;
  std::string group;
  std::string source = "rule";
  std::set<std::string> kinds;
  bool critical = false;
  int64_t for_ms = 0;
  int64_t onsets = 0;
  int64_t detecting_onsets = 0;   // onsets that detect at least one incident
  int64_t false_alerts() const { return onsets - detecting_onsets; }
  std::optional<double> precision;  // detecting / onsets; none without onsets
  std::optional<double> recall;     // caught / incidents it is scored on (ScoredOn); none without incidents
  std::optional<double> ttd_median_s;
  std::optional<double> ttd_worst_s;
  std::vector<IncidentOutcome> incidents;  // the incidents it is scored on (ScoredOn), in file order
  std::map<std::string, KindCount> by_kind;
  std::vector<char> onset_detects;  // per interval of its RuleFirings: 1 if it detects something
};

/// Scores one rule against the incidents it is scored on (ScoredOn). An onset that detects an incident
/// the rule is not scored on (a critical rule on a warning incident) is no false alert, and catches
/// nothing.
RuleScore ScoreRule(const RuleFirings& firings, const std::vector<Incident>& incidents, const MatchWindow& window);

/// The score of a set of rules: every incident, caught when any rule caught it (its time to detect
/// the earliest); onsets and detecting onsets summed over the rules.
RuleScore ScoreSet(const std::string& name, const std::vector<RuleScore>& scores,
                   const std::vector<Incident>& incidents);

}  // namespace acmetrace::scoring

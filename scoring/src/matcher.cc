// Onsets against incidents; incidents sorted by start are searched from a bound on their duration so
// a week of flags is not compared with every incident.
#include "acmetrace/scoring/matcher.h"

#include <algorithm>

namespace acmetrace::scoring {

namespace {

const std::string* Find(const Labels& labels, const char* name) {
  auto it = labels.find(name);
  return it == labels.end() ? nullptr : &it->second;
}

std::string AlertNode(const Labels& labels) {
  for (const char* name : {"Hostname", "hostname", "node"}) {
    if (const std::string* v = Find(labels, name)) return *v;
  }
  return "";
}

void FillTtd(RuleScore& score) {
  std::vector<int64_t> ttd;
  for (const IncidentOutcome& o : score.incidents) {
    if (o.ttd_ms) ttd.push_back(*o.ttd_ms);
  }
  if (ttd.empty()) return;
  std::sort(ttd.begin(), ttd.end());
  const size_t n = ttd.size();
  score.ttd_median_s = (n % 2 == 1 ? static_cast<double>(ttd[n / 2]) : (ttd[n / 2 - 1] + ttd[n / 2]) / 2.0) / 1000.0;
  score.ttd_worst_s = static_cast<double>(ttd.back()) / 1000.0;
}

void FillRatios(RuleScore& score) {
  if (score.onsets > 0) score.precision = static_cast<double>(score.detecting_onsets) / static_cast<double>(score.onsets);
  int64_t caught = 0;
  for (const IncidentOutcome& o : score.incidents) caught += o.caught ? 1 : 0;
  if (!score.incidents.empty()) score.recall = static_cast<double>(caught) / static_cast<double>(score.incidents.size());
}

}  // namespace

bool ScoredOn(const std::set<std::string>& rule_kinds, bool critical, const Incident& incident) {
  if (!rule_kinds.empty() && rule_kinds.count(incident.kind) == 0) return false;
  return !critical || incident.severity != IncidentSeverity::kWarning;
}

std::string AlertSubject(const Labels& labels) {
  if (const std::string* subject = Find(labels, "subject")) return *subject;
  std::string node = AlertNode(labels);
  if (node.empty()) return "";
  if (const std::string* gpu = Find(labels, "gpu")) return node + "-" + *gpu;
  return node;
}

bool Detects(const Labels& labels, int64_t onset_ms, const std::set<std::string>& rule_kinds, const Incident& incident,
             const MatchWindow& window) {
  if (onset_ms < incident.start_ms - window.before_ms || onset_ms > incident.end_ms + window.after_ms) return false;
  if (const std::string* cluster = Find(labels, "cluster"); cluster != nullptr && *cluster != incident.cluster) {
    return false;
  }
  if (const std::string* kind = Find(labels, "kind")) {
    if (*kind != incident.kind) return false;
  } else if (!rule_kinds.empty() && rule_kinds.count(incident.kind) == 0) {
    return false;
  }
  if (incident.subject.empty()) return true;  // unknown subject: any of its kind and cluster
  const std::string subject = AlertSubject(labels);
  if (!subject.empty() && subject != incident.subject) {
    const std::string node = Find(labels, "subject") ? std::string() : AlertNode(labels);
    if (node.empty() || node != incident.subject) return false;
  }
  return true;
}

RuleScore ScoreRule(const RuleFirings& firings, const std::vector<Incident>& incidents, const MatchWindow& window) {
  // The rule's identity copied field by field into another type, as score_run.cc and job_event_source.cc
  // copy theirs: alike in shape only.
  RuleScore score;
  score.rule = firings.rule;
  score.group = firings.group;
  score.source = firings.source;
  score.kinds = firings.kinds;
  score.critical = firings.critical;
  score.for_ms = firings.for_ms;
  // The rule's incidents, and where each sits among them.
  std::vector<int64_t> slot(incidents.size(), -1);
  for (size_t i = 0; i < incidents.size(); ++i) {
    if (!ScoredOn(firings.kinds, firings.critical, incidents[i])) continue;
    slot[i] = static_cast<int64_t>(score.incidents.size());
    score.incidents.push_back({i, false, std::nullopt});
    KindCount& count = score.by_kind[incidents[i].kind];
    ++count.total;
  }
  // Incidents by start, and the longest one, bound the search of each onset.
  std::vector<size_t> by_start(incidents.size());
  int64_t longest_ms = 0;
  for (size_t i = 0; i < incidents.size(); ++i) {
    by_start[i] = i;
    longest_ms = std::max(longest_ms, incidents[i].end_ms - incidents[i].start_ms);
  }
  std::sort(by_start.begin(), by_start.end(),
            [&](size_t a, size_t b) { return incidents[a].start_ms < incidents[b].start_ms; });
  score.onset_detects.assign(firings.intervals.size(), 0);
  for (size_t f = 0; f < firings.intervals.size(); ++f) {
    const FiringInterval& interval = firings.intervals[f];
    ++score.onsets;
    const int64_t onset = interval.start_ms;
    // start <= onset + before and start >= onset - after - longest.
    const int64_t lowest_start = onset - window.after_ms - longest_ms;
    auto it = std::lower_bound(by_start.begin(), by_start.end(), lowest_start,
                               [&](size_t i, int64_t t) { return incidents[i].start_ms < t; });
    bool detects = false;
    for (; it != by_start.end() && incidents[*it].start_ms <= onset + window.before_ms; ++it) {
      const Incident& incident = incidents[*it];
      if (!Detects(interval.labels, onset, firings.kinds, incident, window)) continue;
      detects = true;
      if (slot[*it] < 0) continue;  // an incident below the rule's tier: seen, not scored
      IncidentOutcome& outcome = score.incidents[static_cast<size_t>(slot[*it])];
      const int64_t ttd = onset - incident.start_ms;
      if (!outcome.caught) {
        outcome.caught = true;
        ++score.by_kind[incident.kind].caught;
      }
      if (!outcome.ttd_ms || ttd < *outcome.ttd_ms) outcome.ttd_ms = ttd;
    }
    if (detects) {
      score.onset_detects[f] = 1;
      ++score.detecting_onsets;
    }
  }
  FillRatios(score);
  FillTtd(score);
  return score;
}

RuleScore ScoreSet(const std::string& name, const std::vector<RuleScore>& scores,
                   const std::vector<Incident>& incidents) {
  RuleScore total;
  total.rule = name;
  total.source = scores.empty() ? "rule" : scores.front().source;
  for (size_t i = 0; i < incidents.size(); ++i) total.incidents.push_back({i, false, std::nullopt});
  for (const RuleScore& s : scores) {
    total.onsets += s.onsets;
    total.detecting_onsets += s.detecting_onsets;
    for (const IncidentOutcome& o : s.incidents) {
      IncidentOutcome& t = total.incidents[o.incident];
      if (!o.caught) continue;
      t.caught = true;
      if (!t.ttd_ms || *o.ttd_ms < *t.ttd_ms) t.ttd_ms = o.ttd_ms;
    }
  }
  for (const IncidentOutcome& o : total.incidents) {
    KindCount& count = total.by_kind[incidents[o.incident].kind];
    ++count.total;
    count.caught += o.caught ? 1 : 0;
  }
  FillRatios(total);
  FillTtd(total);
  return total;
}

}  // namespace acmetrace::scoring

// Prometheus's per-alert state machine (rules/alerting.go, AlertingRule.Eval in v2.42), one label set
// at a time over the evaluation grid.
#include "acmetrace/scoring/alert_state.h"

#include <map>

namespace acmetrace::scoring {

Labels AlertLabels(const Labels& series_labels, const AlertRule& rule) {
  Labels labels = series_labels;
  labels.erase("__name__");
  for (const auto& [name, value] : rule.labels) labels[name] = value;
  labels["alertname"] = rule.name;
  return labels;
}

std::vector<FiringInterval> ReplayAlertRule(const std::vector<Series>& result, const AlertRule& rule,
                                            const EvalSchedule& schedule) {
  std::vector<FiringInterval> out;
  if (schedule.step_ms <= 0 || schedule.end_ms < schedule.start_ms) return out;
  const int64_t steps = (schedule.end_ms - schedule.start_ms) / schedule.step_ms + 1;
  // Which evaluations returned each alert's label set.
  std::map<Labels, std::vector<char>> active;
  for (const Series& s : result) {
    std::vector<char>& at = active[AlertLabels(s.labels, rule)];
    if (at.empty()) at.assign(static_cast<size_t>(steps), 0);
    for (int64_t ts : s.ts_ms) {
      const int64_t offset = ts - schedule.start_ms;
      if (offset < 0 || offset % schedule.step_ms != 0) continue;  // not one of our evaluations
      const int64_t k = offset / schedule.step_ms;
      if (k < steps) at[static_cast<size_t>(k)] = 1;
    }
  }
  enum class State { kInactive, kPending, kFiring };
  for (const auto& [labels, at] : active) {
    State state = State::kInactive;
    int64_t active_at = 0, fired_at = 0, keep_firing_since = -1;
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t ts = schedule.start_ms + k * schedule.step_ms;
      if (at[static_cast<size_t>(k)]) {
        // In the result: a new pending alert unless one is pending or firing already.
        if (state == State::kInactive) {
          state = State::kPending;
          active_at = ts;
        }
        keep_firing_since = -1;
      } else {
        // Not in the result: pending ones are dropped; firing ones resolve unless keep_firing_for holds them.
        bool keep_firing = false;
        if (state == State::kFiring && schedule.keep_firing_for_ms > 0) {
          if (keep_firing_since < 0) keep_firing_since = ts;
          keep_firing = ts - keep_firing_since < schedule.keep_firing_for_ms;
        }
        if (!keep_firing) {
          if (state == State::kFiring) out.push_back({labels, fired_at, ts, false});
          state = State::kInactive;
          keep_firing_since = -1;
          continue;
        }
      }
      if (state == State::kPending && ts - active_at >= schedule.for_ms) {
        state = State::kFiring;
        fired_at = ts;
      }
    }
    if (state == State::kFiring) {
      out.push_back({labels, fired_at, schedule.start_ms + (steps - 1) * schedule.step_ms, true});
    }
  }
  return out;
}

}  // namespace acmetrace::scoring

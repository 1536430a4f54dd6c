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

void ReplayAlertStates(const std::vector<Series>& result, const AlertRule& rule, const EvalSchedule& schedule,
                       const std::function<void(const Labels&, const AlertEvaluation&)>& on_active,
                       CarriedAlerts* carried) {
  if (schedule.step_ms <= 0 || schedule.end_ms < schedule.start_ms) return;
  const int64_t steps = (schedule.end_ms - schedule.start_ms) / schedule.step_ms + 1;
  // Which evaluations returned each alert's label set (and the carried alerts, whether or not they did).
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
  CarriedAlerts still_active;
  if (carried != nullptr) {
    for (const auto& [labels, state] : *carried) {
      std::vector<char>& at = active[labels];
      if (at.empty()) at.assign(static_cast<size_t>(steps), 0);
    }
  }
  enum class State { kInactive, kPending, kFiring };
  for (const auto& [labels, at] : active) {
    State state = State::kInactive;
    int64_t active_at = 0, keep_firing_since = -1;
    if (carried != nullptr) {
      if (auto it = carried->find(labels); it != carried->end()) {
        state = it->second.firing ? State::kFiring : State::kPending;
        active_at = it->second.active_at_ms;
        keep_firing_since = it->second.keep_firing_since_ms;
      }
    }
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
          state = State::kInactive;
          keep_firing_since = -1;
          continue;
        }
      }
      const bool onset = state == State::kPending && ts - active_at >= schedule.for_ms;
      if (onset) state = State::kFiring;
      on_active(labels, {ts, state == State::kFiring, active_at, onset});
    }
    if (carried != nullptr && state != State::kInactive) still_active[labels] = {state == State::kFiring, active_at, keep_firing_since};
  }
  if (carried != nullptr) *carried = std::move(still_active);
}

std::vector<FiringInterval> ReplayAlertRule(const std::vector<Series>& result, const AlertRule& rule,
                                            const EvalSchedule& schedule) {
  // A firing spell runs from the evaluation it turned firing at to the first evaluation at which it no
  // longer fires (resolved), or to the last evaluation if it fires there.
  std::vector<FiringInterval> out;
  if (schedule.step_ms <= 0 || schedule.end_ms < schedule.start_ms) return out;
  const int64_t last = schedule.start_ms + (schedule.end_ms - schedule.start_ms) / schedule.step_ms * schedule.step_ms;
  const Labels* current = nullptr;  // the label set being told (valid during ReplayAlertStates only)
  Labels spell_labels;               // the open spell's labels, kept past it
  int64_t fired_at = 0, last_firing = 0;
  bool spell = false;
  auto close = [&] {
    if (!spell) return;
    const bool open = last_firing == last;
    out.push_back({std::move(spell_labels), fired_at, open ? last : last_firing + schedule.step_ms, open});
    spell = false;
  };
  ReplayAlertStates(result, rule, schedule, [&](const Labels& labels, const AlertEvaluation& e) {
    if (current != &labels) {
      close();
      current = &labels;
    }
    // Pending, or a new onset (it went inactive in between, which is told nothing): the spell ended.
    if (spell && (!e.firing || e.onset)) close();
    if (!e.firing) return;
    if (!spell) {
      spell = true;
      spell_labels = labels;
      fired_at = e.ts_ms;
    }
    last_firing = e.ts_ms;
  });
  close();
  return out;
}

}  // namespace acmetrace::scoring

// The alerting state machine of Prometheus (rules/alerting.go, v2.42) replayed over a range query's
// answer: pending until `for:` has held, firing, kept firing for `keep_firing_for` after the
// expression stops returning the series, inactive.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "acmetrace/scoring/range_query.h"
#include "acmetrace/scoring/rule_file.h"

namespace acmetrace::scoring {

/// One firing spell of one alert (label set): from the evaluation at which it turned firing (its
/// onset) to the evaluation at which it was resolved, or to the end of the window. Value type.
struct FiringInterval {
  Labels labels;
  int64_t start_ms = 0;  // the onset
  int64_t end_ms = 0;
  bool open = false;     // still firing at the last evaluation
};

/// How one rule is evaluated over a window. Value type.
struct EvalSchedule {
  int64_t start_ms = 0;  // first evaluation
  int64_t end_ms = 0;    // last evaluation is the last grid time <= end_ms
  int64_t step_ms = kDefaultEvaluationIntervalMs;
  int64_t for_ms = 0;
  int64_t keep_firing_for_ms = 0;
};

/// The labels Prometheus gives the alert of one result series: the series' labels without __name__,
/// then the rule's labels (which win), then alertname.
Labels AlertLabels(const Labels& series_labels, const AlertRule& rule);

/// One alert at one evaluation at which it is active: what Prometheus writes then as ALERTS (with
/// alertstate "pending" or "firing") and ALERTS_FOR_STATE (value: active_at in unix seconds). Value type.
struct AlertEvaluation {
  int64_t ts_ms = 0;
  bool firing = false;
  int64_t active_at_ms = 0;  // the evaluation at which it turned pending
  bool onset = false;        // it turned firing at this evaluation (a firing carried into a slice is no onset)
};

/// An alert pending or firing at the last evaluation of a window, as the next window starts it: a
/// window evaluated a slice at a time goes on where the slice before stopped. Value type.
struct CarriedAlert {
  bool firing = false;
  int64_t active_at_ms = 0;
  int64_t keep_firing_since_ms = -1;  // the first evaluation it was held by keep_firing_for, or -1
};
using CarriedAlerts = std::map<Labels, CarriedAlert>;  // by alert labels (AlertLabels)

/// The state machine of ReplayAlertRule, told every evaluation at which an alert is pending or firing
/// (including while keep_firing_for holds it), one label set after another (sorted), in time order.
/// With `carried`, the alerts in it start in their carried state (absent from the result, a pending one
/// is dropped at the first evaluation, a firing one may be held), and on return it holds the alerts
/// active at the last evaluation: the next slice's schedule starts one step after this one's last.
void ReplayAlertStates(const std::vector<Series>& result, const AlertRule& rule, const EvalSchedule& schedule,
                       const std::function<void(const Labels&, const AlertEvaluation&)>& on_active,
                       CarriedAlerts* carried = nullptr);

/// Replays the state machine over the evaluations start_ms, start_ms + step_ms, ... <= end_ms. An
/// alert is active at an evaluation when its label set has a sample at that time in `result`
/// (series whose alert labels coincide are one alert). Each label set is independent and starts
/// inactive at the first evaluation, as in a freshly started Prometheus. Intervals come sorted by
/// labels, then onset.
std::vector<FiringInterval> ReplayAlertRule(const std::vector<Series>& result, const AlertRule& rule,
                                            const EvalSchedule& schedule);

}  // namespace acmetrace::scoring

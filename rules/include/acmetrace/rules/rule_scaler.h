// Prometheus rule files at replay speed N: every span of wall time a rule holds (for, keep_firing_for,
// range selectors, subquery ranges and steps, offset, the group's interval) divided by N, so that a rule
// evaluated against `acmetrace run --speed N` looks at the trace time it looks at in a live fleet.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/scoring/rule_file.h"

namespace acmetrace::rules {

/// The release samples telemetry every 15 s of trace time: the scrape interval that sees every sample at
/// speed 1, and the evaluation interval of the shipped prometheus.yml.
inline constexpr int64_t kTraceSampleIntervalMs = 15'000;
/// The longest duration written: Prometheus keeps durations as int64 nanoseconds (about 292 years).
inline constexpr int64_t kMaxDurationMs = INT64_MAX / 1'000'000;

/// A duration divided by the speed. Value type.
struct ScaledDuration {
  int64_t ms = 0;
  /// Why the result is not exactly ms / speed ("" when it is): rounded to a millisecond, or raised to
  /// 1ms because Prometheus refuses a zero range and a zero would change the rule's meaning.
  std::string rounding;
};

/// ms / speed to the nearest millisecond, never 0 unless ms is 0; an error if above kMaxDurationMs.
core::Result<ScaledDuration> ScaleDurationMs(int64_t ms, double speed);

/// A PromQL expression with its time spans divided by the speed, and what could not be scaled (one
/// sentence each, without file or rule: the caller names them). Value type.
struct ScaledExpression {
  std::string expr;
  std::vector<std::string> warnings;
};

/// Rewrites range selectors `[5m]`, subqueries `[1h:5m]` / `[1h:]` and `offset 5m` (and `offset -5m`) of
/// expr, by a lexer that skips string literals ("...", '...', `...`) and comments, so a `[` inside a
/// label matcher's regex is left alone. Everything else is copied byte for byte. Warns, and leaves as
/// they are, what keeps its wall-clock meaning: `@` modifiers, time() and the calendar functions,
/// timestamp(), per-second functions (rate, irate, deriv: N times the trace's rate), predict_linear's
/// seconds, a bracket that is not a duration. Errors: a duration that cannot be scaled (too long).
core::Result<ScaledExpression> ScaleExpression(std::string_view expr, double speed);

/// One rule file, scaled: its text (YAML, with a header comment) and the warnings, each one line
/// "FILE:LINE: group G, rule R: ...". Value type.
struct ScaledRuleFile {
  std::string text;
  std::vector<std::string> warnings;
};

/// Scales a rule file that scoring::LoadRuleText accepts (checked first: its error, "FILE:LINE: field:
/// reason", is returned as is). `for`, `keep_firing_for`, each expression and the group's `interval` are
/// divided by speed; everything else is written back unchanged, but YAML comments inside the file are
/// lost (the header says so; the file's leading comment block is kept). source_name is how the header
/// names the source (e.g. its path as given). Never throws.
core::Result<ScaledRuleFile> ScaleRuleFile(const scoring::RuleFileText& file, double speed,
                                           std::string_view source_name);

/// The scrape and evaluation intervals for speed N: kTraceSampleIntervalMs / N, at least 1 ms.
ScaledDuration RecommendedIntervalMs(double speed);

/// The lines of prometheus.yml that go with rule files scaled for speed: `global:` with
/// scrape_interval, scrape_timeout and evaluation_interval, and `rule_files:` with rule_glob.
std::string PrometheusSnippet(double speed, std::string_view rule_glob);

/// A speed as the header and messages write it: "60", "0.5".
std::string FormatSpeed(double speed);

}  // namespace acmetrace::rules

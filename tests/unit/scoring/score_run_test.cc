// A whole score run over a scripted Prometheus (a RangeQuerier that answers by expression): what a
// user checks first — a rule that never fires, one always on, one flapping, the for: sweep.
#include "acmetrace/scoring/score_run.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "acmetrace/core/time.h"

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z
constexpr int64_t kMin = 60'000;
constexpr int64_t kDay = 24 * 60 * kMin;

// Answers each expression with a function of the evaluation time: present (true) or not.
class ScriptedPrometheus : public RangeQuerier {
 public:
  std::map<std::string, std::function<bool(int64_t)>> present;
  std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>> calls;

  std::map<std::string, RangeAnswer> forged;  // answers given as they are, by expression
  std::optional<std::set<std::string>> names;  // the metric names the server has (none: it cannot say)
  std::vector<std::vector<std::string>> names_asked;

  core::Result<std::set<std::string>> MetricNamesPresent(const std::vector<std::string>& asked, int64_t,
                                                         int64_t) override {
    names_asked.push_back(asked);
    if (!names) return core::Status::Error("HTTP 404");
    std::set<std::string> out;
    for (const std::string& n : asked) {
      if (names->count(n) > 0) out.insert(n);
    }
    return out;
  }

  core::Result<RangeAnswer> QueryRange(const std::string& expr, int64_t start_ms, int64_t end_ms,
                                       int64_t step_ms) override {
    calls.emplace_back(expr, start_ms, end_ms, step_ms);
    if (auto f = forged.find(expr); f != forged.end()) return f->second;
    auto it = present.find(expr);
    if (it == present.end()) return core::Status::Error("unknown expression " + expr);
    Series s;
    s.labels = {{"cluster", "seren"}};
    for (int64_t t = start_ms; t <= end_ms; t += step_ms) {
      if (it->second(t)) s.ts_ms.push_back(t);
    }
    if (s.ts_ms.empty()) return RangeAnswer{};
    return RangeAnswer{{s}, 0, ""};
  }
};

AlertRule Rule(const std::string& name, int64_t for_ms = 0) {
  AlertRule r;
  r.name = name;
  r.group = "g";
  r.file = "rules.yml";
  r.line = 1;
  r.expr = name;
  r.for_ms = for_ms;
  return r;
}

// Four incidents in one day, one every six hours from 02:00, 10 minutes each.
std::vector<Incident> Incidents() {
  std::vector<Incident> out;
  for (int i = 0; i < 4; ++i) {
    const int64_t start = kT0 + (2 + 6 * i) * 60 * kMin;
    out.push_back({"seren", "util_drop", "seren", start, start + 10 * kMin});
  }
  return out;
}

bool DuringAnIncident(int64_t t) {
  for (const Incident& i : Incidents()) {
    if (t >= i.start_ms && t < i.end_ms) return true;
  }
  return false;
}

class ScoreRunTest : public testing::Test {
 protected:
  ScoreRunTest() {
    prometheus_.present["Never"] = [](int64_t) { return false; };
    prometheus_.present["AlwaysOn"] = [](int64_t) { return true; };
    // On one minute in every three, all day.
    prometheus_.present["Flapping"] = [](int64_t t) { return (t - kT0) / kMin % 3 == 0; };
    // On from one minute after each incident starts until it ends.
    prometheus_.present["Good"] = [](int64_t t) { return DuringAnIncident(t) && DuringAnIncident(t - kMin); };
    for (const char* name : {"Never", "AlwaysOn", "Flapping", "Good"}) rules_.alerts.push_back(Rule(name));
    options_.from_ms = kT0;
    options_.to_ms = kT0 + kDay - kMin;  // 1440 evaluations
  }

  const RuleScore& Of(const ScoreReport& report, const std::string& rule) {
    for (const RuleScore& s : report.scores) {
      if (s.rule == rule) return s;
    }
    ADD_FAILURE() << "no rule " << rule;
    return report.total;
  }

  ScriptedPrometheus prometheus_;
  RuleSet rules_;
  ScoreOptions options_;
};

TEST_F(ScoreRunTest, NeverFiringAlwaysOnAndFlappingScoreWhatTheyAreWorth) {
  core::Result<ScoreReport> run = ScoreRules(rules_, &prometheus_, {}, Incidents(), options_);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const ScoreReport& report = run.value();

  const RuleScore& never = Of(report, "Never");
  EXPECT_EQ(never.onsets, 0);
  EXPECT_DOUBLE_EQ(*never.recall, 0.0);

  // Always on: one onset at the first evaluation, hours before any incident.
  const RuleScore& always = Of(report, "AlwaysOn");
  EXPECT_EQ(always.onsets, 1);
  EXPECT_DOUBLE_EQ(*always.recall, 0.0);
  EXPECT_DOUBLE_EQ(*always.precision, 0.0);

  // Flapping: 480 onsets a day; it "catches" everything, but almost every onset is false: the 7
  // onsets in each incident's [start - 2 min, end + 10 min] detect it, 28 of 480.
  const RuleScore& flapping = Of(report, "Flapping");
  EXPECT_EQ(flapping.onsets, 480);
  EXPECT_DOUBLE_EQ(*flapping.recall, 1.0);
  EXPECT_DOUBLE_EQ(*flapping.precision, 28.0 / 480.0);

  const RuleScore& good = Of(report, "Good");
  EXPECT_EQ(good.onsets, 4);
  EXPECT_DOUBLE_EQ(*good.precision, 1.0);
  EXPECT_DOUBLE_EQ(*good.recall, 1.0);
  EXPECT_DOUBLE_EQ(*good.ttd_median_s, 60.0);

  EXPECT_EQ(report.total.onsets, 0 + 1 + 480 + 4);
  EXPECT_DOUBLE_EQ(*report.total.recall, 1.0);
}

TEST_F(ScoreRunTest, EachRuleIsQueriedOnceOnItsGroupsInterval) {
  rules_.alerts[1].interval_ms = 15'000;
  ASSERT_TRUE(ScoreRules(rules_, &prometheus_, {}, Incidents(), options_).ok());
  ASSERT_EQ(prometheus_.calls.size(), 4u);
  EXPECT_EQ(prometheus_.calls[0], std::make_tuple(std::string("Never"), kT0, kT0 + kDay - kMin, kMin));
  EXPECT_EQ(std::get<3>(prometheus_.calls[1]), 15'000);
}

TEST_F(ScoreRunTest, TheForSweepScoresEachRuleAtEachValueFromOneQuery) {
  options_.sweep_for_ms = {0, kMin, 5 * kMin, 15 * kMin};
  core::Result<ScoreReport> run = ScoreRules(rules_, &prometheus_, {}, Incidents(), options_);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(prometheus_.calls.size(), 4u);
  ASSERT_EQ(run.value().sweep.size(), 16u);
  // Good at for 0s, 1m, 5m, 15m: ttd 1, 2, 6 min; at 15m it never holds long enough (9 min spells).
  const std::vector<SweepRow>& sweep = run.value().sweep;
  EXPECT_EQ(sweep[12].score.rule, "Good");
  EXPECT_DOUBLE_EQ(*sweep[12].score.ttd_median_s, 60.0);
  EXPECT_DOUBLE_EQ(*sweep[13].score.ttd_median_s, 120.0);
  EXPECT_DOUBLE_EQ(*sweep[14].score.ttd_median_s, 360.0);
  EXPECT_EQ(sweep[15].score.onsets, 0);
  EXPECT_DOUBLE_EQ(*sweep[15].score.recall, 0.0);
  // Flapping at for 1m never fires: the for: users would pick.
  EXPECT_EQ(sweep[9].score.rule, "Flapping");
  EXPECT_EQ(sweep[9].score.onsets, 0);
}

TEST_F(ScoreRunTest, IncidentsOutsideTheWindowAreLeftOutAndCounted) {
  options_.to_ms = kT0 + 5 * 60 * kMin;  // the incident at 02:00
  core::Result<ScoreReport> run = ScoreRules(rules_, &prometheus_, {}, Incidents(), options_);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run.value().incidents.size(), 1u);
  EXPECT_EQ(run.value().incidents_outside, 3);
}

TEST_F(ScoreRunTest, AFailedQueryNamesTheRule) {
  rules_.alerts.push_back(Rule("Unknown"));
  core::Result<ScoreReport> run = ScoreRules(rules_, &prometheus_, {}, Incidents(), options_);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(), "rules.yml:1: Unknown: unknown expression Unknown");
}

TEST_F(ScoreRunTest, FlagsAreScoredBesideTheRules) {
  FlagKind flags;
  flags.kind = "util_drop";
  flags.intervals.push_back({{{"cluster", "seren"}, {"kind", "util_drop"}, {"subject", "seren"}},
                             Incidents()[0].start_ms + 30'000, Incidents()[0].end_ms, false});
  core::Result<ScoreReport> run = ScoreRules(rules_, &prometheus_, {flags}, Incidents(), options_);
  ASSERT_TRUE(run.ok());
  const RuleScore& flag = Of(run.value(), "flag:util_drop");
  EXPECT_EQ(flag.source, "flag");
  EXPECT_DOUBLE_EQ(*flag.recall, 0.25);
  EXPECT_DOUBLE_EQ(*flag.ttd_median_s, 30.0);
  ASSERT_TRUE(run.value().flags_total.has_value());
  EXPECT_EQ(run.value().flags_total->onsets, 1);
  EXPECT_EQ(run.value().total.onsets, 485);  // the rules only
}

TEST_F(ScoreRunTest, SamplesLeftOutOfAnAnswerAreCountedAndSaidOnce) {
  rules_.alerts.push_back(Rule("Forged"));
  RangeAnswer forged;
  forged.series.push_back({{{"cluster", "seren"}}, {kT0}});
  forged.bad_samples = 3;
  forged.first_bad_sample = "time '1e308' is outside the accepted years 2000-2099";
  prometheus_.forged["Forged"] = forged;
  core::Result<ScoreReport> run = ScoreRules(rules_, &prometheus_, {}, Incidents(), options_);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run.value().bad_samples, 3);
  ASSERT_EQ(run.value().warnings.size(), 1u);
  EXPECT_EQ(run.value().warnings[0],
            "rules.yml:1: Forged: 3 samples of Prometheus's answers left out, their time being no evaluation time "
            "(first: time '1e308' is outside the accepted years 2000-2099)");
}

TEST_F(ScoreRunTest, ARecordingRuleOnTheServerIsNotReportedMissing) {
  // Two alerts on recording rules: one backfilled (on the server), one not.
  rules_.records.push_back({"job:gpu_util:avg", "rec", "rules.yml", 2});
  rules_.records.push_back({"cluster:jobs:sum", "rec", "rules.yml", 3});
  AlertRule on_backfilled = Rule("OnBackfilled");
  on_backfilled.expr = "job:gpu_util:avg < 0.1";
  AlertRule on_missing = Rule("OnMissing");
  on_missing.expr = "cluster:jobs:sum > 5";
  prometheus_.present[on_backfilled.expr] = [](int64_t) { return false; };
  prometheus_.present[on_missing.expr] = [](int64_t) { return false; };
  rules_.alerts = {on_backfilled, on_missing};
  prometheus_.names = std::set<std::string>{"job:gpu_util:avg"};
  core::Result<ScoreReport> run = ScoreRules(rules_, &prometheus_, {}, Incidents(), options_);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(prometheus_.names_asked.size(), 1u);  // one question for all of them
  EXPECT_EQ(prometheus_.names_asked[0], (std::vector<std::string>{"cluster:jobs:sum", "job:gpu_util:avg"}));
  ASSERT_EQ(run.value().warnings.size(), 1u);
  EXPECT_EQ(run.value().warnings[0].rfind("rules.yml:1: OnMissing uses cluster:jobs:sum, a recording rule with no "
                                          "series on the server over the window",
                                          0),
            0u)
      << run.value().warnings[0];
  // A server that cannot say: the warning says it was not checked.
  prometheus_.names.reset();
  run = ScoreRules(rules_, &prometheus_, {}, Incidents(), options_);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run.value().warnings.size(), 2u);
  EXPECT_NE(run.value().warnings[0].find("could not be checked: HTTP 404"), std::string::npos) << run.value().warnings[0];
}

TEST(ScoreWindowTest, TheWindowIsCheckedAgainstTheTracesYearsAndEachRulesEvaluations) {
  RuleSet rules;
  rules.alerts.push_back(Rule("A"));
  EXPECT_TRUE(CheckScoreWindow(rules, kT0, kT0 + kDay).ok());
  // --to 99999999999 (year 5138): refused before any request.
  core::Status far = CheckScoreWindow(rules, kT0, 99'999'999'999'000);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.message().rfind("--to: ", 0), 0u) << far.message();
  EXPECT_NE(far.message().find("outside the accepted years 2000-2099"), std::string::npos) << far.message();
  EXPECT_EQ(CheckScoreWindow(rules, -1'000, kT0).message().rfind("--from: ", 0), 0u);
  EXPECT_EQ(CheckScoreWindow(rules, kT0, kT0).message(), "--to must be after --from");
  // 2000 to 2099 at 1m: 52 million evaluations of A.
  core::Status century = CheckScoreWindow(rules, core::kMinTraceTimeMs, core::kMaxTraceTimeMs - 1);
  ASSERT_FALSE(century.ok());
  EXPECT_NE(century.message().find("rules.yml:1: A would be evaluated"), std::string::npos) << century.message();
  // Exactly the limit passes, one more evaluation does not.
  rules.alerts[0].interval_ms = 1'000;
  EXPECT_TRUE(CheckScoreWindow(rules, kT0, kT0 + (kMaxEvaluationsPerRule - 1) * 1'000).ok());
  EXPECT_FALSE(CheckScoreWindow(rules, kT0, kT0 + kMaxEvaluationsPerRule * 1'000).ok());
}

}  // namespace
}  // namespace acmetrace::scoring

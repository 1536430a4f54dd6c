// The matching protocol against hand-computed expectations: the window [start - 2 min, end + 10 min],
// label agreement, alerts already firing, and the per-rule and whole-set figures.
#include "acmetrace/scoring/matcher.h"

#include <gtest/gtest.h>

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z
constexpr int64_t kMin = 60'000;

const Incident kOverheat{"seren", "gpu_overheat", "10.140.1.10-3", kT0 + 60 * kMin, kT0 + 70 * kMin};

Labels GpuAlert() { return {{"cluster", "seren"}, {"kind", "gpu_overheat"}, {"subject", "10.140.1.10-3"}}; }

TEST(MatcherTest, OnsetWindowIsStartMinusTwoMinutesToEndPlusTenMinutes) {
  const MatchWindow w;
  EXPECT_TRUE(Detects(GpuAlert(), kOverheat.start_ms - 2 * kMin, {}, kOverheat, w));
  EXPECT_FALSE(Detects(GpuAlert(), kOverheat.start_ms - 2 * kMin - 1, {}, kOverheat, w));
  EXPECT_TRUE(Detects(GpuAlert(), kOverheat.start_ms, {}, kOverheat, w));
  EXPECT_TRUE(Detects(GpuAlert(), kOverheat.end_ms + 10 * kMin, {}, kOverheat, w));
  EXPECT_FALSE(Detects(GpuAlert(), kOverheat.end_ms + 10 * kMin + 1, {}, kOverheat, w));
}

TEST(MatcherTest, LabelsMustAgree) {
  const MatchWindow w;
  const int64_t onset = kOverheat.start_ms + kMin;
  Labels other_cluster = GpuAlert();
  other_cluster["cluster"] = "kalos";
  EXPECT_FALSE(Detects(other_cluster, onset, {}, kOverheat, w));
  Labels other_kind = GpuAlert();
  other_kind["kind"] = "xid_error";
  EXPECT_FALSE(Detects(other_kind, onset, {}, kOverheat, w));
  Labels other_gpu = GpuAlert();
  other_gpu["subject"] = "10.140.1.10-4";
  EXPECT_FALSE(Detects(other_gpu, onset, {}, kOverheat, w));
  // dcgm-exporter's labels: Hostname (or node) plus gpu make the subject.
  EXPECT_TRUE(Detects({{"cluster", "seren"}, {"Hostname", "10.140.1.10"}, {"gpu", "3"}}, onset, {}, kOverheat, w));
  EXPECT_TRUE(Detects({{"cluster", "seren"}, {"node", "10.140.1.10"}, {"gpu", "3"}}, onset, {}, kOverheat, w));
  EXPECT_FALSE(Detects({{"cluster", "seren"}, {"Hostname", "10.140.1.10"}, {"gpu", "2"}}, onset, {}, kOverheat, w));
  EXPECT_FALSE(Detects({{"cluster", "seren"}, {"Hostname", "10.140.1.11"}, {"gpu", "3"}}, onset, {}, kOverheat, w));
  // A node incident is seen by an alert on one of its GPUs.
  const Incident gap{"seren", "telemetry_gap", "10.140.1.10", kOverheat.start_ms, kOverheat.end_ms};
  EXPECT_TRUE(Detects({{"cluster", "seren"}, {"Hostname", "10.140.1.10"}, {"gpu", "3"}}, onset, {}, gap, w));
  // A rule's kinds stand in for a kind label the alert lacks.
  const Labels no_kind = {{"cluster", "seren"}};
  EXPECT_TRUE(Detects(no_kind, onset, {"gpu_overheat"}, kOverheat, w));
  EXPECT_FALSE(Detects(no_kind, onset, {"util_drop"}, kOverheat, w));
  // No kind anywhere and no subject: cluster and time alone.
  EXPECT_TRUE(Detects(no_kind, onset, {}, kOverheat, w));
  EXPECT_TRUE(Detects({}, onset, {}, kOverheat, w));
}

TEST(MatcherTest, AnIncidentOfUnknownSubjectIsDetectedOnAnySubjectOfItsKindAndCluster) {
  const MatchWindow w;
  // A node failure seen in the job trace: which node is not known.
  const Incident unknown{"seren", "node_failure", "", kT0 + 60 * kMin, kT0 + 70 * kMin};
  const int64_t onset = unknown.start_ms + kMin;
  EXPECT_TRUE(Detects({{"cluster", "seren"}, {"kind", "node_failure"}, {"subject", "10.140.1.10"}}, onset, {}, unknown, w));
  EXPECT_TRUE(Detects({{"cluster", "seren"}, {"Hostname", "10.140.1.99"}, {"gpu", "5"}}, onset, {"node_failure"},
                      unknown, w));
  // Still its kind, its cluster and its time.
  EXPECT_FALSE(Detects({{"cluster", "kalos"}, {"subject", "n"}}, onset, {"node_failure"}, unknown, w));
  EXPECT_FALSE(Detects({{"cluster", "seren"}, {"kind", "gpu_overheat"}, {"subject", "n"}}, onset, {}, unknown, w));
  EXPECT_FALSE(Detects({{"cluster", "seren"}, {"subject", "n"}}, onset, {"gpu_overheat"}, unknown, w));
  EXPECT_FALSE(Detects({{"cluster", "seren"}, {"subject", "n"}}, unknown.end_ms + 11 * kMin, {}, unknown, w));
}

RuleFirings Firings(std::vector<std::pair<int64_t, int64_t>> spans_min, Labels labels = GpuAlert()) {
  RuleFirings f;
  f.rule = "R";
  f.group = "g";
  for (const auto& [s, e] : spans_min) f.intervals.push_back({labels, kT0 + s * kMin, kT0 + e * kMin, false});
  return f;
}

TEST(MatcherTest, AnAlertAlreadyFiringBeforeTheIncidentDetectsNothing) {
  // Firing from minute 30 to 80, across the whole incident (60..70): its onset is 30 min early.
  const RuleScore s = ScoreRule(Firings({{30, 80}}), {kOverheat}, MatchWindow{});
  EXPECT_EQ(s.onsets, 1);
  EXPECT_EQ(s.detecting_onsets, 0);
  EXPECT_FALSE(s.incidents[0].caught);
  EXPECT_EQ(s.recall, 0.0);
  EXPECT_EQ(s.precision, 0.0);
}

TEST(MatcherTest, FiguresOfOneRule) {
  // Three incidents; onsets at 59 (1 min early: ttd -60 s), 75 (within end + 10 min: detects the first
  // again, its ttd stays the earliest), 200 (nothing: false), 305 (the second, ttd 5 min). The third is missed.
  const std::vector<Incident> incidents = {
      kOverheat,
      {"seren", "gpu_overheat", "10.140.1.10-3", kT0 + 300 * kMin, kT0 + 310 * kMin},
      {"seren", "gpu_overheat", "10.140.1.10-3", kT0 + 500 * kMin, kT0 + 510 * kMin},
  };
  const RuleScore s = ScoreRule(Firings({{59, 61}, {75, 76}, {200, 201}, {305, 306}}), incidents, MatchWindow{});
  EXPECT_EQ(s.onsets, 4);
  EXPECT_EQ(s.detecting_onsets, 3);
  EXPECT_EQ(s.false_alerts(), 1);
  EXPECT_DOUBLE_EQ(*s.precision, 0.75);
  EXPECT_DOUBLE_EQ(*s.recall, 2.0 / 3.0);
  ASSERT_TRUE(s.incidents[0].ttd_ms.has_value());
  EXPECT_EQ(*s.incidents[0].ttd_ms, -kMin);  // the earliest detecting onset
  EXPECT_EQ(*s.incidents[1].ttd_ms, 5 * kMin);
  EXPECT_FALSE(s.incidents[2].caught);
  EXPECT_DOUBLE_EQ(*s.ttd_median_s, (-60.0 + 300.0) / 2);
  EXPECT_DOUBLE_EQ(*s.ttd_worst_s, 300.0);
  EXPECT_EQ(s.by_kind.at("gpu_overheat").caught, 2);
  EXPECT_EQ(s.by_kind.at("gpu_overheat").total, 3);
  EXPECT_EQ(s.onset_detects, (std::vector<char>{1, 1, 0, 1}));
}

TEST(MatcherTest, ARuleOfOneKindIsJudgedOnItsKindsIncidents) {
  RuleFirings f = Firings({{61, 62}}, {{"cluster", "seren"}});
  f.kinds = {"gpu_overheat"};
  const std::vector<Incident> incidents = {kOverheat, {"seren", "util_drop", "seren", kT0, kT0 + kMin}};
  const RuleScore s = ScoreRule(f, incidents, MatchWindow{});
  ASSERT_EQ(s.incidents.size(), 1u);
  EXPECT_EQ(s.incidents[0].incident, 0u);
  EXPECT_DOUBLE_EQ(*s.recall, 1.0);
}

TEST(MatcherTest, ACriticalRuleIsScoredOnTheIncidentsNotMarkedWarning) {
  // An overheat short of 90 C (warning), one above (critical), one of a faults.csv without severity.
  Incident warning = kOverheat, critical = kOverheat, untiered = kOverheat;
  warning.severity = IncidentSeverity::kWarning;
  critical.severity = IncidentSeverity::kCritical;
  critical.start_ms = kT0 + 300 * kMin;
  critical.end_ms = kT0 + 310 * kMin;
  untiered.start_ms = kT0 + 500 * kMin;
  untiered.end_ms = kT0 + 510 * kMin;
  const std::vector<Incident> incidents = {warning, critical, untiered};
  // Fires on the warning and the untiered incident, misses the critical one.
  RuleFirings f = Firings({{61, 62}, {501, 502}}, {{"cluster", "seren"}});
  f.kinds = {"gpu_overheat"};
  f.critical = true;
  RuleScore s = ScoreRule(f, incidents, MatchWindow{});
  ASSERT_EQ(s.incidents.size(), 2u);  // not scored on the warning one...
  EXPECT_EQ(s.incidents[0].incident, 1u);
  EXPECT_FALSE(s.incidents[0].caught);  // ...and still penalized for the critical one it missed
  EXPECT_TRUE(s.incidents[1].caught);
  EXPECT_DOUBLE_EQ(*s.recall, 0.5);
  EXPECT_EQ(s.by_kind.at("gpu_overheat").total, 2);
  // Its onset on the warning incident is no false alert: that incident happened.
  EXPECT_EQ(s.false_alerts(), 0);
  EXPECT_EQ(s.onset_detects, (std::vector<char>{1, 1}));
  // A warning rule is scored on all three.
  f.critical = false;
  s = ScoreRule(f, incidents, MatchWindow{});
  ASSERT_EQ(s.incidents.size(), 3u);
  EXPECT_DOUBLE_EQ(*s.recall, 2.0 / 3.0);
  // A critical rule that never fires over warning incidents alone has nothing to be scored on.
  f = Firings({}, {{"cluster", "seren"}});
  f.critical = true;
  s = ScoreRule(f, {warning}, MatchWindow{});
  EXPECT_TRUE(s.incidents.empty());
  EXPECT_FALSE(s.recall.has_value());
}

TEST(MatcherTest, NeverFiringHasNoPrecisionAndNoRecall) {
  const RuleScore s = ScoreRule(Firings({}), {kOverheat}, MatchWindow{});
  EXPECT_EQ(s.onsets, 0);
  EXPECT_FALSE(s.precision.has_value());
  EXPECT_DOUBLE_EQ(*s.recall, 0.0);
  EXPECT_FALSE(s.ttd_median_s.has_value());
}

TEST(MatcherTest, TheSetCatchesWhatAnyRuleCaughtAtItsEarliest) {
  const std::vector<Incident> incidents = {kOverheat, {"seren", "xid_error", "n-1", kT0 + 300 * kMin, kT0 + 301 * kMin}};
  RuleFirings late = Firings({{65, 66}}, {{"cluster", "seren"}});
  late.rule = "late";
  RuleFirings early = Firings({{61, 62}, {400, 401}}, {{"cluster", "seren"}, {"kind", "gpu_overheat"}});
  early.rule = "early";
  // The early rule first: a later, slower rule must not overwrite its time to detect.
  const std::vector<RuleScore> scores = {ScoreRule(early, incidents, {}), ScoreRule(late, incidents, {})};
  const RuleScore total = ScoreSet("all rules", scores, incidents);
  EXPECT_EQ(total.onsets, 3);
  EXPECT_EQ(total.detecting_onsets, 2);
  EXPECT_TRUE(total.incidents[0].caught);
  EXPECT_EQ(*total.incidents[0].ttd_ms, kMin);
  EXPECT_FALSE(total.incidents[1].caught);
  EXPECT_DOUBLE_EQ(*total.recall, 0.5);
  EXPECT_EQ(total.by_kind.at("xid_error").total, 1);
  EXPECT_EQ(total.by_kind.at("xid_error").caught, 0);
}

}  // namespace
}  // namespace acmetrace::scoring

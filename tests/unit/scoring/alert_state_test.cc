// Prometheus's alert state machine replayed over a range query (rules/alerting.go, v2.42), against
// hand-computed firing intervals.
#include "acmetrace/scoring/alert_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z
constexpr int64_t kMin = 60'000;

// A series present at the evaluations t0 + k minutes for each k in `minutes`.
Series At(std::initializer_list<int64_t> minutes, Labels labels = {{"__name__", "m"}, {"cluster", "seren"}}) {
  Series s;
  s.labels = std::move(labels);
  for (int64_t m : minutes) s.ts_ms.push_back(kT0 + m * kMin);
  return s;
}

AlertRule Rule(int64_t for_ms = 0, int64_t keep_ms = 0) {
  AlertRule r;
  r.name = "A";
  r.for_ms = for_ms;
  r.keep_firing_for_ms = keep_ms;
  return r;
}

// Evaluations at t0 .. t0 + 30 min, every minute.
std::vector<FiringInterval> Replay(const std::vector<Series>& result, const AlertRule& rule) {
  return ReplayAlertRule(result, rule, {kT0, kT0 + 30 * kMin, kMin, rule.for_ms, rule.keep_firing_for_ms});
}

struct Span {
  int64_t start_min, end_min;
  bool open;
};

std::vector<Span> Spans(const std::vector<FiringInterval>& intervals) {
  std::vector<Span> out;
  for (const FiringInterval& i : intervals) out.push_back({(i.start_ms - kT0) / kMin, (i.end_ms - kT0) / kMin, i.open});
  return out;
}

void ExpectSpans(const std::vector<FiringInterval>& got, const std::vector<Span>& want) {
  const std::vector<Span> spans = Spans(got);
  ASSERT_EQ(spans.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(spans[i].start_min, want[i].start_min) << i;
    EXPECT_EQ(spans[i].end_min, want[i].end_min) << i;
    EXPECT_EQ(spans[i].open, want[i].open) << i;
  }
}

TEST(AlertStateTest, ForZeroFiresAtTheFirstEvaluationThatReturnsTheSeries) {
  // Present at minutes 5..9: firing from 5, resolved at 10 (the first evaluation without it).
  ExpectSpans(Replay({At({5, 6, 7, 8, 9})}, Rule()), {{5, 10, false}});
}

TEST(AlertStateTest, ForHoldsTheAlertPendingUntilItHeldThatLong) {
  // for: 3m, present 5..12: pending at 5, firing at 8 (8 - 5 >= 3), resolved at 13.
  ExpectSpans(Replay({At({5, 6, 7, 8, 9, 10, 11, 12})}, Rule(3 * kMin)), {{8, 13, false}});
  // Present 5..7 only: 7 - 5 < 3, never fires.
  EXPECT_TRUE(Replay({At({5, 6, 7})}, Rule(3 * kMin)).empty());
  // A gap resets the pending alert: 5, 6, 7, (8 missing), 9, 10, 11, 12 fires at 12, not at 8.
  ExpectSpans(Replay({At({5, 6, 7, 9, 10, 11, 12})}, Rule(3 * kMin)), {{12, 13, false}});
}

TEST(AlertStateTest, KeepFiringForHoldsAFiringAlertAcrossGaps) {
  // keep_firing_for 3m, present 5..7 then 9..10: missing at 8 (kept: 8 - 8 < 3), back at 9: one spell;
  // missing from 11: kept at 11, 12, 13 (13 - 11 < 3), resolved at 14.
  ExpectSpans(Replay({At({5, 6, 7, 9, 10})}, Rule(0, 3 * kMin)), {{5, 14, false}});
  // Without it: two spells.
  ExpectSpans(Replay({At({5, 6, 7, 9, 10})}, Rule()), {{5, 8, false}, {9, 11, false}});
  // keep_firing_for does not keep a pending alert: for 2m, present 5, 6 only: dropped at 7.
  EXPECT_TRUE(Replay({At({5, 6})}, Rule(2 * kMin, 10 * kMin)).empty());
}

TEST(AlertStateTest, AnAlertStillFiringAtTheEndIsOpen) {
  ExpectSpans(Replay({At({28, 29, 30})}, Rule()), {{28, 30, true}});
}

TEST(AlertStateTest, AlwaysOnIsOneSpellFromTheFirstEvaluation) {
  Series s;
  s.labels = {{"cluster", "seren"}};
  for (int64_t m = 0; m <= 30; ++m) s.ts_ms.push_back(kT0 + m * kMin);
  ExpectSpans(Replay({s}, Rule(5 * kMin)), {{5, 30, true}});
}

TEST(AlertStateTest, NeverReturnedNeverFires) { EXPECT_TRUE(Replay({}, Rule()).empty()); }

TEST(AlertStateTest, FlappingGivesOneSpellPerReturn) {
  // Every other minute: for 0s fires 15 times; for 1m never fires (never held a minute).
  Series s = At({});
  for (int64_t m = 0; m < 30; m += 2) s.ts_ms.push_back(kT0 + m * kMin);
  EXPECT_EQ(Replay({s}, Rule()).size(), 15u);
  EXPECT_TRUE(Replay({s}, Rule(kMin)).empty());
}

TEST(AlertStateTest, LabelSetsAreIndependentAndCarryTheRuleLabels) {
  AlertRule rule = Rule();
  rule.labels = {{"severity", "warning"}, {"cluster", "overridden"}};
  const std::vector<FiringInterval> got =
      Replay({At({1, 2}, {{"__name__", "m"}, {"cluster", "seren"}, {"gpu", "0"}}),
              At({2, 3}, {{"__name__", "m"}, {"cluster", "seren"}, {"gpu", "1"}})},
             rule);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].labels, (Labels{{"alertname", "A"}, {"cluster", "overridden"}, {"gpu", "0"}, {"severity", "warning"}}));
  EXPECT_EQ((got[0].start_ms - kT0) / kMin, 1);
  EXPECT_EQ((got[1].start_ms - kT0) / kMin, 2);
}

TEST(AlertStateTest, SeriesWithTheSameAlertLabelsAreOneAlert) {
  // Two metric names, same labels otherwise: one alert, present whenever either is.
  ExpectSpans(Replay({At({1, 2}, {{"__name__", "a"}}), At({3, 4}, {{"__name__", "b"}})}, Rule()), {{1, 5, false}});
}

TEST(AlertStateTest, SamplesOffTheEvaluationGridAreIgnored) {
  Series s = At({});
  s.ts_ms = {kT0 + 30'000, kT0 + 5 * kMin, kT0 - kMin, kT0 + 40 * kMin};
  ExpectSpans(Replay({s}, Rule()), {{5, 6, false}});
}

// What Prometheus writes as ALERTS and ALERTS_FOR_STATE: every evaluation at which the alert is active,
// pending until for: held, then firing (kept firing by keep_firing_for), with the time it became active.
TEST(AlertStateTest, EveryActiveEvaluationIsToldWithItsStateAndActiveAt) {
  std::vector<std::tuple<int64_t, bool, int64_t, bool>> told;  // minute, firing, active since (minute), onset
  const AlertRule rule = Rule(2 * kMin, 2 * kMin);
  ReplayAlertStates({At({5, 6, 7, 8, 20})}, rule, {kT0, kT0 + 30 * kMin, kMin, rule.for_ms, rule.keep_firing_for_ms},
                    [&](const Labels& labels, const AlertEvaluation& e) {
                      EXPECT_EQ(labels.at("alertname"), "A");
                      told.emplace_back((e.ts_ms - kT0) / kMin, e.firing, (e.active_at_ms - kT0) / kMin, e.onset);
                    });
  // Pending at 5 and 6, firing from 7 (7 - 5 >= 2), kept firing at 9 and 10 (missing since 9: 10 - 9 < 2),
  // resolved at 11; back at 20: pending again, active since 20, dropped at 21. Its one onset: 7.
  const std::vector<std::tuple<int64_t, bool, int64_t, bool>> want = {
      {5, false, 5, false}, {6, false, 5, false}, {7, true, 5, true},     {8, true, 5, false},
      {9, true, 5, false},  {10, true, 5, false}, {20, false, 20, false}};
  EXPECT_EQ(told, want);
}

// backfill evaluates the alerting rules a slice of the window at a time, carrying each alert's state
// from one slice to the next: cut anywhere, the slices tell exactly what the whole window tells. Random
// results (three label sets, two of whose series share alert labels) against the replay in one piece.
TEST(AlertStateTest, SlicesWithCarriedStatesTellWhatTheWholeWindowTells) {
  using Told = std::tuple<std::string, int64_t, bool, int64_t, bool>;  // subject, minute, firing, active since, onset
  std::mt19937 random(7);
  int carried_across = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<Series> result;
    for (const char* subject : {"a", "b", "b", "c"}) {
      Series s = At({}, {{"__name__", "m"}, {"subject", subject}, {"pod", std::to_string(result.size())}});
      s.labels.erase("pod");
      const int density = static_cast<int>(random() % 10);
      for (int64_t m = 0; m <= 60; ++m) {
        if (static_cast<int>(random() % 10) < density) s.ts_ms.push_back(kT0 + m * kMin);
      }
      result.push_back(std::move(s));
    }
    const AlertRule rule = Rule(static_cast<int64_t>(random() % 5) * kMin, static_cast<int64_t>(random() % 4) * kMin);
    auto record = [](std::vector<Told>& into) {
      return [&into](const Labels& labels, const AlertEvaluation& e) {
        into.emplace_back(labels.at("subject"), (e.ts_ms - kT0) / kMin, e.firing, (e.active_at_ms - kT0) / kMin,
                          e.onset);
      };
    };
    std::vector<Told> whole;
    ReplayAlertStates(result, rule, {kT0, kT0 + 60 * kMin, kMin, rule.for_ms, rule.keep_firing_for_ms}, record(whole));
    // Slices of 1 to 20 evaluations, each asked only for its own evaluations (as a range query would be).
    std::vector<Told> sliced;
    CarriedAlerts carried;
    for (int64_t from = 0; from <= 60;) {
      const int64_t to = std::min<int64_t>(60, from + static_cast<int64_t>(random() % 20));
      std::vector<Series> part = result;
      for (Series& s : part) {
        std::erase_if(s.ts_ms, [&](int64_t ts) { return ts < kT0 + from * kMin || ts > kT0 + to * kMin; });
      }
      if (!carried.empty() && from > 0) ++carried_across;
      ReplayAlertStates(part, rule, {kT0 + from * kMin, kT0 + to * kMin, kMin, rule.for_ms, rule.keep_firing_for_ms},
                        record(sliced), &carried);
      from = to + 1;
    }
    std::sort(whole.begin(), whole.end());
    std::sort(sliced.begin(), sliced.end());
    ASSERT_EQ(sliced, whole) << "round " << round << ", for " << rule.for_ms / kMin << " min, keep_firing_for "
                             << rule.keep_firing_for_ms / kMin << " min";
  }
  EXPECT_GT(carried_across, 300) << "too few alerts carried across a cut to test the carrying";
}

}  // namespace
}  // namespace acmetrace::scoring

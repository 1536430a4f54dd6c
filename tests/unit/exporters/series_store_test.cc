// SeriesStore: cardinality cap, expiry in event time (the times fed are the clock), per-target
// filtering, replace semantics.
#include "acmetrace/exporters/series_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace acmetrace::exporters {
namespace {

FamilySpec Gauge(const std::string& name, std::vector<std::string> labels, bool per_target = false,
                 Expiry expiry = Expiry::kSubject) {
  return FamilySpec{name, "help", SeriesType::kGauge, std::move(labels), expiry, per_target};
}

TEST(SeriesStoreTest, CapDropsNewSeriesAndCountsThem) {
  SeriesStore store(StoreOptions{300'000, 86'400'000, 3});
  const FamilyId f = store.AddFamily(Gauge("g", {"cluster", "node"}));
  for (int i = 0; i < 5; ++i) {
    const bool created = store.Set(f, store.MakeLabels(f, {"seren", "n" + std::to_string(i)}), i, "seren", 1000);
    EXPECT_EQ(created, i < 3) << i;
  }
  // An existing series still updates at the cap.
  EXPECT_TRUE(store.Set(f, store.MakeLabels(f, {"seren", "n0"}), 42, "seren", 2000));
  const FamilyCounts c = store.counts(f);
  EXPECT_EQ(c.series, 3);
  EXPECT_EQ(c.dropped, 2);
  EXPECT_EQ(store.Get(f, store.MakeLabels(f, {"seren", "n0"}).key), 42);
  // And the drops are exposed per metric.
  bool found = false;
  for (const auto& mf : store.Collect()) {
    if (mf.name != "acmetrace_series_dropped_total") continue;
    for (const auto& m : mf.metric) {
      if (m.label.at(0).value == "g") {
        EXPECT_EQ(m.counter.value, 2);
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);
}

constexpr SeriesStore::ClockKind kWindows = SeriesStore::ClockKind::kWindows;

TEST(SeriesStoreTest, SeriesExpireAfterTheirTtlOfTheirClustersEventTime) {
  SeriesStore store(StoreOptions{60'000, 600'000, 100});
  const FamilyId f = store.AddFamily(Gauge("g", {"cluster", "node"}));
  const FamilyId a = store.AddFamily(Gauge("a", {"cluster"}, false, Expiry::kAnomaly));
  const FamilyId never = store.AddFamily(Gauge("n", {"cluster"}, false, Expiry::kNever));
  store.AdvanceClock("seren", 0, kWindows);
  store.AdvanceClock("kalos", 0, kWindows);
  store.Set(f, store.MakeLabels(f, {"seren", "old"}), 1, "seren", 0);
  store.Set(f, store.MakeLabels(f, {"kalos", "other"}), 1, "kalos", 0);
  store.Set(a, store.MakeLabels(a, {"seren"}), 1, "seren", 0);
  store.Set(never, store.MakeLabels(never, {"seren"}), 1, "seren", 0);
  // The subject "fresh" keeps being seen; "old" is not seen again.
  for (int64_t t = 15'000; t <= 120'000; t += 15'000) {
    store.Set(f, store.MakeLabels(f, {"seren", "fresh"}), 1, "seren", t);
    store.AdvanceClock("seren", t, kWindows);
  }
  EXPECT_TRUE(std::isnan(store.Get(f, store.MakeLabels(f, {"seren", "old"}).key)));
  EXPECT_EQ(store.Get(f, store.MakeLabels(f, {"seren", "fresh"}).key), 1);
  EXPECT_EQ(store.counts(f).expired, 1);
  // Kalos' clock did not move: its series stay, whatever Seren's time.
  EXPECT_EQ(store.Get(f, store.MakeLabels(f, {"kalos", "other"}).key), 1);
  // Anomaly TTL is longer; self metrics never expire.
  EXPECT_EQ(store.Get(a, store.MakeLabels(a, {"seren"}).key), 1);
  store.AdvanceClock("seren", 800'000, kWindows);
  EXPECT_TRUE(std::isnan(store.Get(a, store.MakeLabels(a, {"seren"}).key)));
  EXPECT_EQ(store.Get(never, store.MakeLabels(never, {"seren"}).key), 1);
}

TEST(SeriesStoreTest, ExpiryIsWithinAQuarterTtlAfterTheTtl) {
  SeriesStore store(StoreOptions{60'000, 600'000, 100});
  const FamilyId f = store.AddFamily(Gauge("g", {"node"}));
  store.AdvanceClock("c", 0, kWindows);
  store.Set(f, store.MakeLabels(f, {"x"}), 1, "c", 0);
  store.AdvanceClock("c", 60'000, kWindows);  // exactly the TTL: still there
  EXPECT_EQ(store.Get(f, "x"), 1);
  store.AdvanceClock("c", 75'001, kWindows);
  EXPECT_TRUE(std::isnan(store.Get(f, "x")));
}

TEST(SeriesStoreTest, AGapSpanningASweepPointCountsOneExpiryWhetherOrNotTheSweepRan) {
  SeriesStore store(StoreOptions{60'000, 600'000, 100});
  const FamilyId f = store.AddFamily(Gauge("g", {"node"}, /*per_target=*/true));
  store.Set(f, store.MakeLabels(f, {"x"}), 1, "c", 0);
  store.Set(f, store.MakeLabels(f, {"x"}), 1, "c", 90'000);  // the 75 s sweep point passed unseen
  EXPECT_EQ(store.counts(f).expired, 1);
  store.AdvanceClock("c", 1);
  store.AdvanceClock("c", 100'000);  // sweeps at 90 s: x was set at 90 s, so it stays
  EXPECT_EQ(store.Get(f, "x"), 1);
  EXPECT_EQ(store.counts(f).expired, 1);
  store.Set(f, store.MakeLabels(f, {"x"}), 1, "c", 100'000);  // no sweep point in a 10 s gap
  EXPECT_EQ(store.counts(f).expired, 1);
}

TEST(SeriesStoreTest, ClockNeverGoesBack) {
  SeriesStore store(StoreOptions{60'000, 600'000, 100});
  store.AdvanceClock("c", 100'000);
  store.AdvanceClock("c", 50'000);
  EXPECT_EQ(store.clock_ms("c"), 100'000);
}

TEST(SeriesStoreTest, TargetSelectsOnePerTargetNodesSeries) {
  SeriesStore store(StoreOptions{});
  const FamilyId persona = store.AddFamily(Gauge("DCGM_X", {"Hostname", "cluster"}, true));
  const FamilyId other = store.AddFamily(Gauge("acmetrace_y", {"cluster"}));
  store.Set(persona, store.MakeLabels(persona, {"10.0.0.1", "seren"}), 1, "seren", 0, "10.0.0.1");
  store.Set(persona, store.MakeLabels(persona, {"10.0.0.2", "seren"}), 2, "seren", 0, "10.0.0.2");
  store.Set(persona, store.MakeLabels(persona, {"10.0.0.1", "kalos"}), 3, "kalos", 0, "10.0.0.1");
  store.Set(other, store.MakeLabels(other, {"seren"}), 4, "seren", 0);

  auto values = [&](std::string_view target) {
    std::vector<double> v;
    for (const auto& mf : store.Collect(target)) {
      EXPECT_EQ(mf.name, "DCGM_X");  // only per-target families
      for (const auto& m : mf.metric) v.push_back(m.gauge.value);
    }
    return v;
  };
  EXPECT_EQ(values("10.0.0.2"), std::vector<double>({2}));
  EXPECT_EQ(values("seren/10.0.0.1"), std::vector<double>({1}));
  EXPECT_EQ(values("10.0.0.1").size(), 2u);  // both clusters' node of that name
  EXPECT_TRUE(values("10.9.9.9").empty());

  size_t families = 0;
  for (const auto& mf : store.Collect()) families += mf.name == "DCGM_X" || mf.name == "acmetrace_y";
  EXPECT_EQ(families, 2u);
  const auto targets = store.Targets();
  EXPECT_EQ(targets.at("seren"), std::vector<std::string>({"10.0.0.1", "10.0.0.2"}));
  EXPECT_EQ(targets.at("kalos"), std::vector<std::string>({"10.0.0.1"}));
}

TEST(SeriesStoreTest, RemoveSetBeforeOnlyTouchesThatClusterAndOlderSeries) {
  SeriesStore store(StoreOptions{});
  const FamilyId f = store.AddFamily(Gauge("g", {"cluster", "type"}));
  store.Set(f, store.MakeLabels(f, {"seren", "SFT"}), 1, "seren", 60'000);
  store.Set(f, store.MakeLabels(f, {"seren", "Eval"}), 1, "seren", 120'000);
  store.Set(f, store.MakeLabels(f, {"kalos", "SFT"}), 1, "kalos", 60'000);
  store.RemoveSetBefore(f, "seren", 120'000);
  EXPECT_TRUE(std::isnan(store.Get(f, store.MakeLabels(f, {"seren", "SFT"}).key)));
  EXPECT_EQ(store.Get(f, store.MakeLabels(f, {"seren", "Eval"}).key), 1);
  EXPECT_EQ(store.Get(f, store.MakeLabels(f, {"kalos", "SFT"}).key), 1);
}

// The walk over every per-target series (what a backfill sends each scrape) reads a second index
// of the series, kept beside the hash map: after any mix of creations, removals, expiries and
// re-creations it must hold exactly what the exposition (rendered from the hash map) holds.
TEST(SeriesStoreTest, TheWalkOverEveryTargetSeriesHoldsWhatTheExpositionHoldsAfterAnyErasures) {
  SeriesStore store(StoreOptions{60'000, 600'000, 1'000});
  const FamilyId persona = store.AddFamily(Gauge("DCGM_X", {"Hostname", "gpu"}, true));
  const FamilyId other = store.AddFamily(Gauge("DCGM_Y", {"Hostname"}, true));
  auto walked = [&] {
    std::multiset<std::string> out;
    store.ForEachTargetSample([&](const SeriesStore::TargetSample& s) {
      std::string line = s.family.name + std::string(s.labels_text) + ' ';
      AppendSampleValue(line, s.value);
      out.insert(line);
    });
    return out;
  };
  auto exposed = [&] {
    std::string text;
    store.AppendText(text, {}, true, SeriesStore::Families::kAll);
    std::multiset<std::string> out;
    size_t at = 0;
    while (at < text.size()) {
      const size_t eol = text.find('\n', at);
      const std::string line = text.substr(at, eol - at);
      at = eol + 1;
      if (line.rfind("DCGM_", 0) == 0) out.insert(line);
    }
    return out;
  };
  std::mt19937 rng(7);
  int64_t now = 0;
  size_t erased_somewhere = 0;
  for (int round = 0; round < 60; ++round) {
    now += 15'000;
    for (int k = 0; k < 40; ++k) {
      const int node = static_cast<int>(rng() % 30);
      const std::string cluster = node % 2 == 0 ? "seren" : "kalos";
      const std::string host = "10.0.0." + std::to_string(node);
      const FamilyId f = rng() % 3 == 0 ? other : persona;
      const SeriesLabels labels =
          f == other ? store.MakeLabels(f, {host}) : store.MakeLabels(f, {host, std::to_string(rng() % 8)});
      store.Set(f, labels, static_cast<double>(rng() % 1000), cluster, now, host);
    }
    const size_t before = walked().size();
    switch (round % 4) {
      case 0:  // removed one by one, some of them the last created
        for (int k = 0; k < 5; ++k) {
          store.Remove(persona, store.MakeLabels(persona, {"10.0.0." + std::to_string(rng() % 30),
                                                           std::to_string(rng() % 8)}).key);
        }
        break;
      case 1:  // a cluster's older series
        store.RemoveSetBefore(persona, round % 8 == 1 ? "seren" : "kalos", now - 30'000);
        break;
      default:  // the clocks' sweeps expire what was not set for the TTL
        store.AdvanceClock("seren", now);
        store.AdvanceClock("kalos", now);
        break;
    }
    const std::multiset<std::string> walk = walked();
    erased_somewhere += before - walk.size();
    ASSERT_EQ(walk, exposed()) << "round " << round;
  }
  EXPECT_GT(erased_somewhere, 100u);  // the erasures really happened, in every way
  EXPECT_GT(store.counts(persona).expired, 0);
}

TEST(SeriesStoreTest, CollectHasNoTimestamps) {
  SeriesStore store(StoreOptions{});
  const FamilyId f = store.AddFamily(Gauge("g", {"cluster"}));
  store.Set(f, store.MakeLabels(f, {"seren"}), 1, "seren", 1'688'169'600'000);
  for (const auto& mf : store.Collect()) {
    for (const auto& m : mf.metric) EXPECT_EQ(m.timestamp_ms, 0) << mf.name;
  }
}

}  // namespace
}  // namespace acmetrace::exporters

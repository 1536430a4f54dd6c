// core::Settings: one row per key declares it with the member it fills; the defaults are the
// struct's, the fill converts units, and the type's bounds are the only checks.
#include "acmetrace/core/settings.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace acmetrace::core {
namespace {

enum class Mode { kFast, kSafe };

struct Toy {
  int threads = 4;
  int64_t ttl_ms = 300'000;
  int64_t scrape_ms = 250;
  double ratio = 0.25;
  bool on = true;
  std::string name = "seren";
  std::vector<std::string> clusters = {"seren", "kalos"};
  Mode mode = Mode::kSafe;
  bool worker = false;
};

const Settings<Toy>& ToySettings() {
  static const Settings<Toy> settings = Settings<Toy>("toy")
                                            .Int("threads", &Toy::threads, 1, 64, "threads")
                                            .SecondsAsMs("ttl_s", &Toy::ttl_ms, 1, "ttl")
                                            .PositiveSecondsAsMs("scrape_s", &Toy::scrape_ms, "scrape")
                                            .Double("ratio", &Toy::ratio, ConfigType::Double(0, 1), "ratio")
                                            .Bool("on", &Toy::on, "on")
                                            .Text("name", &Toy::name, ConfigType::NonEmptyString(), "name")
                                            .TextList("clusters", &Toy::clusters, ConfigType::List(ConfigType::String(), 1), "clusters")
                                            .Choice("mode", &Toy::mode, {{"fast", Mode::kFast}, {"safe", Mode::kSafe}}, "mode")
                                            .Bool("worker", &Toy::worker, "worker")
                                            .ConfigDefault("true");
  return settings;
}

TEST(SettingsTest, TheDeclaredDefaultsAreTheStructsInTheKeysUnits) {
  Config config;
  ToySettings().Declare(config);
  std::map<std::string, std::string> defaults;
  for (const ConfigKey& k : config.keys()) defaults[k.key] = k.default_value;
  EXPECT_EQ(defaults, (std::map<std::string, std::string>{{"toy.threads", "4"},
                                                          {"toy.ttl_s", "300"},
                                                          {"toy.scrape_s", "0.25"},
                                                          {"toy.ratio", "0.25"},
                                                          {"toy.on", "true"},
                                                          {"toy.name", "seren"},
                                                          {"toy.clusters", "seren,kalos"},
                                                          {"toy.mode", "safe"},
                                                          {"toy.worker", "true"}}));
  // Filled from the defaults: the struct's values, but for the row that says otherwise.
  const Toy filled = ToySettings().Fill(config);
  const Toy plain;
  EXPECT_EQ(filled.threads, plain.threads);
  EXPECT_EQ(filled.ttl_ms, plain.ttl_ms);
  EXPECT_EQ(filled.scrape_ms, plain.scrape_ms);
  EXPECT_EQ(filled.ratio, plain.ratio);
  EXPECT_EQ(filled.name, plain.name);
  EXPECT_EQ(filled.clusters, plain.clusters);
  EXPECT_EQ(filled.mode, plain.mode);
  EXPECT_TRUE(filled.worker);
}

TEST(SettingsTest, FillConvertsUnitsAndChoices) {
  Config config;
  ToySettings().Declare(config);
  ASSERT_TRUE(config.Set("toy.ttl_s", "7").ok());
  ASSERT_TRUE(config.Set("toy.scrape_s", "1.5").ok());
  ASSERT_TRUE(config.Set("toy.mode", "fast").ok());
  ASSERT_TRUE(config.Set("toy.clusters", "kalos").ok());
  const Toy t = ToySettings().Fill(config);
  EXPECT_EQ(t.ttl_ms, 7000);
  EXPECT_EQ(t.scrape_ms, 1500);
  EXPECT_EQ(t.mode, Mode::kFast);
  EXPECT_EQ(t.clusters, std::vector<std::string>{"kalos"});
}

TEST(SettingsTest, SecondsHeldInMillisecondsAreAtLeastOneMillisecond) {
  // 0.0004 s would be held as 0 ms: refused by the type, as the hand check before the table did.
  Config config;
  ToySettings().Declare(config);
  ASSERT_TRUE(config.Set("toy.scrape_s", "0.0004").ok());
  ASSERT_EQ(config.Validate().size(), 1u);
  EXPECT_NE(config.Validate()[0].find("toy.scrape_s"), std::string::npos) << config.Validate()[0];
  ASSERT_TRUE(config.Set("toy.scrape_s", "0.001").ok());
  EXPECT_TRUE(config.Validate().empty());
  EXPECT_EQ(ToySettings().Fill(config).scrape_ms, 1);
}

TEST(SettingsTest, AValueOutsideTheRowsBoundsIsRefusedNamingWhereItCameFrom) {
  Config config;
  ToySettings().Declare(config);
  ASSERT_TRUE(config.Set("toy.threads", "65", "--threads").ok());
  EXPECT_EQ(config.Validate(), std::vector<std::string>{"--threads: must be <= 64, got 65"});
  try {
    ToySettings().Fill(config);
    FAIL() << "filled from an invalid value";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "--threads: must be <= 64, got 65");
  }
}

}  // namespace
}  // namespace acmetrace::core

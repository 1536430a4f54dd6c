// process.* keys: defaults, parsing and the errors that name the key.
#include "acmetrace/processors/process_config.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace acmetrace::processors {
namespace {

core::Config Declared() {
  core::Config config;
  DeclareProcessConfig(config);
  return config;
}

TEST(ProcessConfigTest, DefaultsAreThePublishedSizesAndTheThreeViews) {
  const ProcessOptions o = ProcessOptionsFromConfig(Declared());
  EXPECT_EQ(o.windows_s, (std::vector<int64_t>{60, 300, 3600}));
  EXPECT_EQ(o.capacity_gpus.at("seren"), 2288);
  EXPECT_EQ(o.capacity_gpus.at("kalos"), 2416);
  EXPECT_EQ(o.allowed_lateness_ms, 60'000);
  EXPECT_EQ(o.quantile_accuracy, 0.01);
  EXPECT_EQ(o.units, TelemetryUnits::kRaw);
  EXPECT_EQ(o.clusters, (std::vector<std::string>{"seren", "kalos"}));
  EXPECT_EQ(o.base_window_ms(), 60'000);
  EXPECT_EQ(o.longest_window_ms(), 3'600'000);
}

TEST(ProcessConfigTest, ParsesOverrides) {
  core::Config config = Declared();
  ASSERT_TRUE(config.LoadYamlText("process:\n  windows_s: [3600, 30, 120]\n  capacity_gpus: seren=8, philly=2490\n"
                                  "  units: percent\n  allowed_lateness_ms: 0\n",
                                  "test.yaml")
                  .ok());
  const ProcessOptions o = ProcessOptionsFromConfig(config);
  EXPECT_EQ(o.windows_s, (std::vector<int64_t>{30, 120, 3600}));
  EXPECT_EQ(o.capacity_gpus.size(), 2u);
  EXPECT_EQ(o.capacity_gpus.at("philly"), 2490);
  EXPECT_EQ(o.units, TelemetryUnits::kPercent);
  EXPECT_EQ(o.allowed_lateness_ms, 0);
}

TEST(ProcessConfigTest, MalformedValuesNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"process.windows_s", "60,90"},        {"process.windows_s", ""},
      {"process.capacity_gpus", "seren"},    {"process.units", "fractions"},
      {"process.quantile_accuracy", "0"},    {"process.allowed_lateness_ms", "-1"},
      {"process.snapshot_interval_ms", "0"}, {"process.clusters", ""},
  };
  for (const auto& [key, value] : bad) {
    core::Config config = Declared();
    ASSERT_TRUE(config.Set(key, value).ok());
    try {
      ProcessOptionsFromConfig(config);
      ADD_FAILURE() << key << "=" << value << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace acmetrace::processors

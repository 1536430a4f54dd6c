// Every declared key of every stage, table-driven from its declared type: a wrong-typed value and a
// value just outside its range are errors naming the key, a value at the edge is accepted. A new key
// is covered as soon as it is declared.
#include "acmetrace/pipeline/config_keys.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/pipeline/run_config.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/producers/replay_config.h"
#include "acmetrace/remote_write/remote_write_config.h"

namespace acmetrace::pipeline {
namespace {

using core::ConfigType;
using Kind = ConfigType::Kind;

struct Probe {
  std::string value;
  bool accepted;
  const char* what;  // why this value was chosen, for failure messages
};

std::string Exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// Values generated from the type alone, with the verdict the type promises.
std::vector<Probe> ProbesFor(const ConfigType& t) {
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
  constexpr int64_t kHighest = std::numeric_limits<int64_t>::max();
  std::vector<Probe> out;
  switch (t.kind) {
    case Kind::kString:
      out.push_back({"some text", true, "text"});
      if (!t.allow_empty) out.push_back({"", false, "empty"});
      break;
    case Kind::kBool:
      out.push_back({"maybe", false, "wrong type"});
      out.push_back({"2", false, "wrong type"});
      out.push_back({"", false, "empty"});
      out.push_back({"TRUE", true, "edge"});
      out.push_back({"off", true, "edge"});
      break;
    case Kind::kInt:
      out.push_back({"abc", false, "wrong type"});
      out.push_back({"1.5", false, "wrong type"});
      out.push_back({"", false, "empty"});
      if (t.int_min != kLowest) {
        if (!(t.int_also && *t.int_also == t.int_min - 1)) {
          out.push_back({std::to_string(t.int_min - 1), false, "just below the minimum"});
        }
        out.push_back({std::to_string(t.int_min), true, "the minimum"});
      }
      if (t.int_max != kHighest) {
        out.push_back({std::to_string(t.int_max + 1), false, "just above the maximum"});
        out.push_back({std::to_string(t.int_max), true, "the maximum"});
      }
      if (t.int_also) out.push_back({std::to_string(*t.int_also), true, "the extra value"});
      break;
    case Kind::kDouble: {
      out.push_back({"abc", false, "wrong type"});
      out.push_back({"nan", false, "not finite"});
      out.push_back({"inf", false, "not finite"});
      out.push_back({"", false, "empty"});
      const double inf = std::numeric_limits<double>::infinity();
      if (std::isfinite(t.double_min)) {
        const bool open = t.min_bound == ConfigType::Bound::kOpen;
        out.push_back({Exact(t.double_min), !open, "the minimum"});
        out.push_back({Exact(std::nextafter(t.double_min, open ? inf : -inf)), open,
                       open ? "just above an open minimum" : "just below the minimum"});
      }
      if (std::isfinite(t.double_max)) {
        const bool open = t.max_bound == ConfigType::Bound::kOpen;
        out.push_back({Exact(t.double_max), !open, "the maximum"});
        out.push_back({Exact(std::nextafter(t.double_max, open ? -inf : inf)), open,
                       open ? "just below an open maximum" : "just above the maximum"});
      }
      break;
    }
    case Kind::kEnum:
      out.push_back({"no_such_" + t.choices.front(), false, "not a choice"});
      out.push_back({"", false, "empty"});
      for (const std::string& c : t.choices) out.push_back({c, true, "a choice"});
      break;
    case Kind::kList: {
      out.push_back({"", t.allow_empty, "the empty list"});
      std::string good;
      for (const Probe& p : ProbesFor(*t.item)) {
        if (p.accepted && !p.value.empty()) {
          good = p.value;
          break;
        }
      }
      for (const Probe& p : ProbesFor(*t.item)) {
        if (p.value.empty()) continue;  // an empty item is skipped, not judged
        out.push_back({good + "," + p.value, p.accepted, p.what});
      }
      break;
    }
    case Kind::kCustom:
      for (const std::string& v : t.bad_examples) out.push_back({v, false, "a bad example"});
      for (const std::string& v : t.good_examples) out.push_back({v, true, "a good example"});
      out.push_back({"", t.allow_empty, "empty"});
      break;
  }
  return out;
}

core::Config AllKeys() {
  core::Config config;
  DeclareAllConfig(config);
  return config;
}

TEST(ConfigKeysTest, TheDefaultsPassEveryCheck) {
  const core::Config config = AllKeys();
  EXPECT_EQ(CheckAllConfig(config), std::vector<std::string>{});
}

TEST(ConfigKeysTest, EveryKeyRejectsWrongTypesAndValuesOutsideItsRangeAndAcceptsItsEdges) {
  const core::Config declared = AllKeys();
  ASSERT_GT(declared.keys().size(), 100u);
  core::Config config = AllKeys();
  int probes = 0;
  for (const core::ConfigKey& k : declared.keys()) {
    const std::vector<Probe> table = ProbesFor(k.type);
    bool has_rejection = false;
    for (const Probe& p : table) has_rejection = has_rejection || !p.accepted;
    // Only free text (or a list of it, such as cluster names) may accept everything.
    const ConfigType& inner = k.type.kind == Kind::kList ? *k.type.item : k.type;
    if (inner.kind != Kind::kString || !k.type.allow_empty || !inner.allow_empty) {
      EXPECT_TRUE(has_rejection) << k.key << " (" << k.type.Describe() << ") has no value it rejects";
    }
    for (const Probe& p : table) {
      ASSERT_TRUE(config.Set(k.key, p.value).ok());
      const std::vector<std::string> errors = config.Validate();
      ASSERT_TRUE(config.Set(k.key, k.default_value).ok());
      ++probes;
      if (p.accepted) {
        EXPECT_TRUE(errors.empty()) << k.key << " = '" << p.value << "' (" << p.what << ", type "
                                    << k.type.Describe() << ") was rejected: " << errors.front();
      } else {
        ASSERT_EQ(errors.size(), 1u) << k.key << " = '" << p.value << "' (" << p.what << ", type "
                                     << k.type.Describe() << ") was accepted";
        EXPECT_EQ(errors.front().rfind(k.key + ": ", 0), 0u) << errors.front();
        EXPECT_EQ(errors.front().find('\n'), std::string::npos) << errors.front();
      }
    }
  }
  EXPECT_GT(probes, 600);
}

TEST(ConfigKeysTest, EveryKeyHasItsOwnEnvironmentVariableAndItsErrorsNameIt) {
  const core::Config declared = AllKeys();
  for (const core::ConfigKey& k : declared.keys()) {
    const std::string name = core::Config::EnvName(k.key);
    for (const Probe& p : ProbesFor(k.type)) {
      core::Config config = AllKeys();
      const std::string entry = name + "=" + p.value;
      const char* envp[] = {"PATH=/usr/bin", entry.c_str(), nullptr};
      ASSERT_TRUE(config.ApplyEnvironment(envp).ok()) << entry;
      EXPECT_EQ(config.GetString(k.key), p.value) << entry;
      const std::vector<std::string> errors = config.Validate();
      if (!p.accepted) {
        ASSERT_EQ(errors.size(), 1u) << entry;
        EXPECT_EQ(errors.front().rfind(name + ": ", 0), 0u) << errors.front();
      }
      break;  // one probe per key is enough here: the table test above judges the values
    }
  }
}

// The sections whose options struct a Settings table fills, each with the function that fills it.
struct FilledSection {
  std::string section;
  std::function<void(const core::Config&)> fill;
};
std::vector<FilledSection> FilledSections() {
  return {
      {"replay", [](const core::Config& c) { producers::ReplaySettingsFromConfig(c); }},
      {"run", [](const core::Config& c) { RunSettingsFromConfig(c); }},
      {"backfill", [](const core::Config& c) { BackfillSettingsFromConfig(c); }},
      {"remote_write", [](const core::Config& c) { remote_write::RemoteWriteSettingsFromConfig(c); }},
      {"kafka", [](const core::Config& c) { kafka::KafkaSettingsFromConfig(c); }},
  };
}

TEST(ConfigKeysTest, EachTableFillsItsStructsDefaultsFromTheDeclaredDefaults) {
  const core::Config config = AllKeys();
  EXPECT_EQ(producers::ReplaySettingsFromConfig(config), producers::ReplaySettings{});
  EXPECT_EQ(RunSettingsFromConfig(config), RunSettings{});
  EXPECT_EQ(BackfillSettingsFromConfig(config), BackfillSettings{});
  EXPECT_EQ(remote_write::RemoteWriteSettingsFromConfig(config), remote_write::RemoteWriteSettings{});
  kafka::KafkaSettings kafka_defaults;
  kafka_defaults.topics = {"acme.jobs", "acme.util", "acme.power", "acme.metrics", "acme.anomalies"};  // the config's own
  EXPECT_EQ(kafka::KafkaSettingsFromConfig(config), kafka_defaults);
}

// Whoever reads a section's struct (a command, a transport) gets every wrong value of it refused
// with one line naming the key, whether or not the whole configuration was checked before.
TEST(ConfigKeysTest, EveryKeyOfEachTableRefusesWrongTypesAndValuesOutsideItsRangeWhenFilled) {
  const core::Config declared = AllKeys();
  int refused = 0;
  for (const FilledSection& section : FilledSections()) {
    int keys = 0;
    for (const core::ConfigKey& k : declared.keys()) {
      if (k.key.rfind(section.section + ".", 0) != 0) continue;
      ++keys;
      for (const Probe& p : ProbesFor(k.type)) {
        core::Config config = AllKeys();
        ASSERT_TRUE(config.Set(k.key, p.value).ok());
        if (p.accepted) {
          // An accepted kafka.properties_file must name a readable file: not probed here.
          if (k.key != "kafka.properties_file") {
            EXPECT_NO_THROW(section.fill(config)) << k.key << " = '" << p.value << "'";
          }
          continue;
        }
        try {
          section.fill(config);
          ADD_FAILURE() << k.key << " = '" << p.value << "' (" << p.what << ") was filled";
        } catch (const std::invalid_argument& e) {
          const std::string what = e.what();
          EXPECT_EQ(what.rfind(k.key + ": ", 0), 0u) << what;
          EXPECT_EQ(what.find('\n'), std::string::npos) << what;
          ++refused;
        }
      }
    }
    EXPECT_GT(keys, 5) << section.section;
  }
  EXPECT_GT(refused, 150);
}

TEST(ConfigKeysTest, TheIssuesReproductionsAreAllErrorsNamingFileLineAndKey) {
  core::Config config = AllKeys();
  const core::Status loaded = config.LoadYamlText(
      "detect:\n"
      "  gpu_overheat.open_c: abc\n"
      "  failure_burst.step_s: 0\n"
      "  queue_backlog.step_s: 0\n"
      "  gpu_overheat.open_for_s: -30\n"
      "  failure_burst.windows_s: 0,-5,abc\n"
      "run:\n"
      "  queue_capacity: 0\n"
      "replay:\n"
      "  speed: 0\n"
      "process:\n"
      "  quantile_accuracy: 1.5\n"
      "  windows_s: [60, -300]\n",
      "bad.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  const std::vector<std::string> errors = CheckAllConfig(config);
  const std::vector<std::string> expected = {
      "bad.yaml:10: replay.speed: not max or a number in [0.001, 1000000000]: '0'",
      "bad.yaml:13: process.windows_s: item 2 of 2: must be >= 1, got -300",
      "bad.yaml:12: process.quantile_accuracy: must be < 0.5, got 1.5",
      "bad.yaml:2: detect.gpu_overheat.open_c: not a number: 'abc'",
      "bad.yaml:5: detect.gpu_overheat.open_for_s: must be >= 0, got -30",
      "bad.yaml:3: detect.failure_burst.step_s: must be >= 1, got 0",
      "bad.yaml:6: detect.failure_burst.windows_s: item 1 of 3: must be > 0, got 0",
      "bad.yaml:4: detect.queue_backlog.step_s: must be >= 1, got 0",
      "bad.yaml:8: run.queue_capacity: must be >= 1, got 0",
  };
  EXPECT_EQ(errors, expected);
}

TEST(ConfigKeysTest, ChecksAcrossKeysNameWhereTheValueCameFrom) {
  core::Config config = AllKeys();
  ASSERT_TRUE(config.LoadYamlText("detect:\n  gpu_overheat.open_c: 70\nprocess:\n  windows_s: 60,90\n", "a.yaml").ok());
  EXPECT_EQ(CheckAllConfig(config), (std::vector<std::string>{
                                        "a.yaml:4: process.windows_s: 90 is not a multiple of the base window 60",
                                        "detect.gpu_overheat.close_c: must be at most open_c (70)",
                                    }));
  ASSERT_TRUE(config.Set("detect.gpu_overheat.close_c", "65", "--close").ok());
  ASSERT_TRUE(config.Set("export.basic_auth_user", "me", "--user").ok());
  ASSERT_TRUE(config.Set("process.windows_s", "60,120").ok());
  EXPECT_EQ(CheckAllConfig(config), (std::vector<std::string>{
                                        "--user: set export.basic_auth_user and export.basic_auth_password both or "
                                        "neither",
                                    }));
}

TEST(ConfigKeysTest, EveryDetectorsHysteresisMustNotBeInverted) {
  const std::vector<std::pair<std::string, std::string>> inverted = {
      {"detect.gpu_overheat.close_c", "90"},      {"detect.gpu_straggler.close_ratio", "0.5"},
      {"detect.util_drop.close_share", "0.7"},    {"detect.failure_burst.close_score", "8"},
      {"detect.queue_backlog.close_ratio", "3.5"},
  };
  for (const auto& [key, value] : inverted) {
    core::Config config = AllKeys();
    ASSERT_TRUE(config.Set(key, value).ok());
    const std::vector<std::string> errors = CheckAllConfig(config);
    ASSERT_EQ(errors.size(), 1u) << key;
    EXPECT_EQ(errors.front().rfind(key + ": must be at ", 0), 0u) << errors.front();
  }
}

TEST(ConfigKeysTest, TheDetectorFactoryIsBuiltAtLoadAndNeverReadsTheConfigAgain) {
  auto config = std::make_unique<core::Config>(AllKeys());
  ASSERT_TRUE(config->Set("detect.xid_error.enabled", "false").ok());
  const auto factory = processors::MakeDetectorFactory(*config);
  config.reset();  // the factory holds settings, not the config
  const auto detectors = factory();
  EXPECT_EQ(detectors.size(), 8u);
  for (const auto& d : detectors) EXPECT_NE(d->kind(), "xid_error");
  EXPECT_EQ(factory().size(), 8u);  // a fresh set per cluster

  core::Config bad = AllKeys();
  ASSERT_TRUE(bad.Set("detect.gpu_overheat.open_c", "abc", "--open").ok());
  try {
    processors::MakeDetectorFactory(bad);
    FAIL() << "a bad detector key was accepted when the factory was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--open: not a number: 'abc'");
  }
}

}  // namespace
}  // namespace acmetrace::pipeline

// Config: declared keys only, YAML files with errors that name file, line and key, flags on top.
#include "acmetrace/core/config.h"
#include "test_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace acmetrace::core {
namespace {

Config MakeConfig() {
  Config c;
  c.Declare("replay.speed", "max", "trace seconds replayed per wall second, or max");
  c.Declare("replay.clusters", "", "clusters to replay, comma-separated (empty = all)");
  c.Declare("replay.strict", "false", "stop at the first malformed row");
  c.Declare("replay.window_s", "60", "reorder window");
  c.Declare("export.listen", "127.0.0.1:9464", "address of /metrics");
  return c;
}

// Keys with types, as the stages declare them.
Config MakeTypedConfig() {
  Config c;
  c.Declare("replay.window_s", "60", "reorder window", ConfigType::Int(0, 3600));
  c.Declare("replay.strict", "false", "stop at the first malformed row", ConfigType::Bool());
  c.Declare("replay.sink", "stdout", "where records go", ConfigType::Enum({"stdout", "null", "kafka"}));
  c.Declare("detect.gpu_overheat.open_c", "85", "open threshold", ConfigType::Double(-273.15, 1000));
  c.Declare("detect.util_drop.open_share", "0.6", "share", ConfigType::Double(0, 1, ConfigType::Bound::kOpen));
  c.Declare("detect.failure_burst.windows_s", "300,600", "windows", ConfigType::List(ConfigType::PositiveSeconds(), 1));
  c.Declare("export.listen", "127.0.0.1:9400", "address of /metrics", ConfigType::HostPort());
  return c;
}

TEST(ConfigTest, DefaultsApplyUntilSet) {
  Config c = MakeConfig();
  EXPECT_EQ(c.GetString("replay.speed"), "max");
  EXPECT_EQ(c.GetString("replay.clusters"), "");
  EXPECT_FALSE(c.GetBool("replay.strict"));
  EXPECT_EQ(c.GetInt("replay.window_s"), 60);
  EXPECT_EQ(c.GetDouble("replay.window_s"), 60.0);
  EXPECT_TRUE(c.GetList("replay.clusters").empty());
}

TEST(ConfigTest, LoadsAYamlFile) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "acmetrace.yaml",
                                     "# comment\n"
                                     "replay:\n"
                                     "  speed: 60\n"
                                     "  clusters: [seren, kalos]\n"
                                     "  strict: true\n"
                                     "export:\n"
                                     "  listen: 0.0.0.0:9000\n");
  Config c = MakeConfig();
  const Status s = c.LoadYamlFile(path);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.GetDouble("replay.speed"), 60.0);
  EXPECT_EQ(c.GetList("replay.clusters"), (std::vector<std::string>{"seren", "kalos"}));
  EXPECT_TRUE(c.GetBool("replay.strict"));
  EXPECT_EQ(c.GetString("export.listen"), "0.0.0.0:9000");
  EXPECT_EQ(c.GetInt("replay.window_s"), 60);  // untouched keys keep their default
}

TEST(ConfigTest, EscapesMeanWhatYamlDecodesThemTo) {
  // yaml-cpp 0.7 decodes \N and \_ to the single bytes 0x85 and 0xA0, not U+0085 and U+00A0 in UTF-8.
  Config c = MakeConfig();
  const Status s = c.LoadYamlText("replay:\n  speed: \"a\\Nb\"\n  clusters: [\"se\\_ren\", kalos]\n", "c.yaml");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.GetString("replay.speed"), "a\xc2\x85" "b");
  EXPECT_EQ(c.GetList("replay.clusters"), (std::vector<std::string>{"se\xc2\xa0ren", "kalos"}));
}

TEST(ConfigTest, UnknownKeyIsAnErrorNamingFileLineAndKey) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "typo.yaml",
                                     "replay:\n"
                                     "  speed: 60\n"
                                     "  sped: 30\n");
  Config c = MakeConfig();
  const Status s = c.LoadYamlFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(path + ":3: replay.sped:", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("unknown"), std::string::npos) << s.message();
}

TEST(ConfigTest, UnknownSectionIsAnErrorNamingFileLineAndSection) {
  Config c = MakeConfig();
  const Status s = c.LoadYamlText("replay:\n  speed: 2\nprocess:\n  window_s: 60\n", "my.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "my.yaml:3: process: unknown section (see `acmetrace config` for the documented keys)");
}

TEST(ConfigTest, NonScalarValueIsAnError) {
  Config c = MakeConfig();
  const Status s = c.LoadYamlText("replay:\n  speed:\n    fast: 1\n", "nested.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("nested.yaml:2: replay.speed:", 0), 0u) << s.message();
}

TEST(ConfigTest, SectionThatIsNotAMapIsAnError) {
  Config c = MakeConfig();
  const Status s = c.LoadYamlText("replay: 5\n", "flat.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("flat.yaml:1: replay:", 0), 0u) << s.message();
}

TEST(ConfigTest, SyntaxErrorNamesFileAndLine) {
  Config c = MakeConfig();
  const Status s = c.LoadYamlText("replay:\n  speed: 60\n  clusters: [seren\n", "broken.yaml");
  ASSERT_FALSE(s.ok());
  // yaml-cpp reports where it noticed the error (the end of the unclosed list): a line number.
  ASSERT_EQ(s.message().rfind("broken.yaml:", 0), 0u) << s.message();
  const std::string rest = s.message().substr(std::string("broken.yaml:").size());
  const size_t colon = rest.find(':');
  ASSERT_NE(colon, std::string::npos) << s.message();
  ASSERT_GT(colon, 0u) << s.message();
  EXPECT_EQ(rest.substr(0, colon).find_first_not_of("0123456789"), std::string::npos) << s.message();
  EXPECT_GE(std::stoi(rest.substr(0, colon)), 3) << s.message();
}

TEST(ConfigTest, TopLevelMustBeAMap) {
  Config c = MakeConfig();
  const Status s = c.LoadYamlText("- a\n- b\n", "list.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("list.yaml", 0), 0u) << s.message();
}

TEST(ConfigTest, EmptyFileAndEmptySectionsAreFine) {
  Config c = MakeConfig();
  EXPECT_TRUE(c.LoadYamlText("", "empty.yaml").ok());
  EXPECT_TRUE(c.LoadYamlText("# only a comment\n", "comment.yaml").ok());
  EXPECT_TRUE(c.LoadYamlText("replay:\n", "section.yaml").ok());
  EXPECT_EQ(c.GetString("replay.speed"), "max");
}

TEST(ConfigTest, NullValueIsEmpty) {
  Config c = MakeConfig();
  ASSERT_TRUE(c.LoadYamlText("export:\n  listen:\nreplay:\n  speed: 5\n", "null.yaml").ok());
  EXPECT_EQ(c.GetString("export.listen"), "");
  EXPECT_EQ(c.GetString("replay.speed"), "5");
}

TEST(ConfigTest, TheWordNullIsKeptForKeysWhereItIsAChoice) {
  // replay.sink: null (count only) must not turn into the empty text YAML makes of null.
  Config c = MakeTypedConfig();
  ASSERT_TRUE(c.LoadYamlText("replay:\n  sink: null  # count only\n", "null.yaml").ok());
  EXPECT_EQ(c.GetString("replay.sink"), "null");
  EXPECT_TRUE(c.Validate().empty());
  ASSERT_TRUE(c.LoadYamlText("replay:\n  sink: ~\n", "tilde.yaml").ok());
  EXPECT_EQ(c.GetString("replay.sink"), "");  // no value, which is no choice
  EXPECT_EQ(c.Validate(), std::vector<std::string>{"tilde.yaml:2: replay.sink: expected stdout, null or kafka, got ''"});
}

TEST(ConfigTest, MissingFileIsAnErrorNamingIt) {
  Config c = MakeConfig();
  const std::string path = testing::TempDir() + "acmetrace_no_such_config.yaml";
  const Status s = c.LoadYamlFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

TEST(ConfigTest, FlagsOverrideTheFile) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "a.yaml", "replay:\n  speed: 60\n  clusters: seren\n");
  Config c = MakeConfig();
  ASSERT_TRUE(c.LoadYamlFile(path).ok());
  ASSERT_TRUE(c.Set("replay.speed", "max").ok());
  EXPECT_EQ(c.GetString("replay.speed"), "max");
  EXPECT_EQ(c.GetString("replay.clusters"), "seren");  // not overridden: the file's value stays
}

TEST(ConfigTest, SettingAnUnknownKeyIsAnErrorNamingIt) {
  Config c = MakeConfig();
  const Status s = c.Set("replay.sped", "60");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("replay.sped"), std::string::npos) << s.message();
  EXPECT_EQ(c.GetString("replay.speed"), "max");
}

TEST(ConfigTest, MalformedValuesThrowNamingTheKey) {
  Config c = MakeConfig();
  ASSERT_TRUE(c.Set("replay.window_s", "sixty").ok());
  ASSERT_TRUE(c.Set("replay.strict", "maybe").ok());
  try {
    c.GetInt("replay.window_s");
    FAIL() << "GetInt accepted 'sixty'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("replay.window_s"), std::string::npos) << e.what();
  }
  EXPECT_THROW(c.GetDouble("replay.window_s"), std::invalid_argument);
  try {
    c.GetBool("replay.strict");
    FAIL() << "GetBool accepted 'maybe'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("replay.strict"), std::string::npos) << e.what();
  }
}

TEST(ConfigTest, ParsesBooleansAndLists) {
  Config c = MakeConfig();
  for (const char* t : {"true", "yes", "on", "1"}) {
    ASSERT_TRUE(c.Set("replay.strict", t).ok());
    EXPECT_TRUE(c.GetBool("replay.strict")) << t;
  }
  for (const char* f : {"false", "no", "off", "0"}) {
    ASSERT_TRUE(c.Set("replay.strict", f).ok());
    EXPECT_FALSE(c.GetBool("replay.strict")) << f;
  }
  ASSERT_TRUE(c.Set("replay.clusters", " seren , kalos,,").ok());
  EXPECT_EQ(c.GetList("replay.clusters"), (std::vector<std::string>{"seren", "kalos"}));
}

TEST(ConfigTest, UndeclaredOrTwiceDeclaredKeysAreProgrammingErrors) {
  Config c = MakeConfig();
  EXPECT_THROW(c.GetString("replay.nope"), std::logic_error);
  EXPECT_THROW(c.Declare("replay.speed", "1", "again"), std::logic_error);
  EXPECT_THROW(c.Declare("nosection", "1", "no dot"), std::logic_error);
}

TEST(ConfigTest, DocumentedYamlListsEveryKeyWithDefaultAndHelp) {
  Config c = MakeConfig();
  const std::string doc = c.DocumentedYaml();
  ASSERT_EQ(c.keys().size(), 5u);
  for (const ConfigKey& k : c.keys()) {
    const std::string section = k.key.substr(0, k.key.find('.'));
    const std::string name = k.key.substr(k.key.find('.') + 1);
    const std::string value = k.default_value.empty() ? "\"\"" : k.default_value;
    const std::string entry = "  # " + k.help + "\n  # (" + k.type.Describe() + ")\n  " + name + ": " + value + "\n";
    const size_t at = doc.find(entry);
    ASSERT_NE(at, std::string::npos) << k.key << " missing in:\n" << doc;
    // The entry sits under its own section header.
    const size_t header = doc.rfind("\n" + section + ":\n", at);
    ASSERT_NE(header, std::string::npos) << k.key;
    for (const ConfigKey& other : c.keys()) {
      const std::string other_section = other.key.substr(0, other.key.find('.'));
      if (other_section == section) continue;
      const size_t other_header = doc.rfind("\n" + other_section + ":\n", at);
      EXPECT_TRUE(other_header == std::string::npos || other_header < header) << k.key;
    }
  }
}

TEST(ConfigTest, DocumentedYamlLoadsBackToTheDefaults) {
  Config c = MakeConfig();
  const std::string doc = c.DocumentedYaml();
  Config d = MakeConfig();
  ASSERT_TRUE(d.Set("replay.speed", "5").ok());
  const Status s = d.LoadYamlText(doc, "documented.yaml");
  ASSERT_TRUE(s.ok()) << s.message() << "\n" << doc;
  for (const ConfigKey& k : c.keys()) EXPECT_EQ(d.GetString(k.key), k.default_value) << k.key;
}

TEST(ConfigTypeTest, IntegersAndTheirRange) {
  const ConfigType t = ConfigType::Int(1, 64);
  EXPECT_EQ(t.Check("1"), std::nullopt);
  EXPECT_EQ(t.Check("64"), std::nullopt);
  EXPECT_EQ(t.Check("0"), "must be >= 1, got 0");
  EXPECT_EQ(t.Check("65"), "must be <= 64, got 65");
  EXPECT_EQ(t.Check("4.5"), "not an integer: '4.5'");
  EXPECT_EQ(t.Check(""), "not an integer: ''");
  EXPECT_EQ(t.Describe(), "integer in [1, 64]");
  const ConfigType partitions = ConfigType::IntOr(-1, 1, 1000);
  EXPECT_EQ(partitions.Check("-1"), std::nullopt);
  EXPECT_EQ(partitions.Check("0"), "must be -1 or >= 1, got 0");
  EXPECT_EQ(partitions.Describe(), "integer -1 or in [1, 1000]");
}

TEST(ConfigTypeTest, NumbersAndOpenOrClosedBounds) {
  const ConfigType share = ConfigType::Double(0, 1, ConfigType::Bound::kOpen, ConfigType::Bound::kClosed);
  EXPECT_EQ(share.Check("1"), std::nullopt);
  EXPECT_EQ(share.Check("0.000001"), std::nullopt);
  EXPECT_EQ(share.Check("0"), "must be > 0, got 0");
  EXPECT_EQ(share.Check("1.01"), "must be <= 1, got 1.01");
  EXPECT_EQ(share.Check("abc"), "not a number: 'abc'");
  EXPECT_EQ(share.Check("nan"), "not a number: 'nan'");
  EXPECT_EQ(share.Check("inf"), "not a number: 'inf'");
  EXPECT_EQ(share.Describe(), "number in (0, 1]");
  EXPECT_EQ(ConfigType::Seconds().Describe(), "number in [0, 1000000000]");
  EXPECT_EQ(ConfigType::Seconds().Check("1e300"), "must be <= 1000000000, got 1e300");
}

TEST(ConfigTypeTest, BooleansEnumsAndLists) {
  EXPECT_EQ(ConfigType::Bool().Check("Yes"), std::nullopt);
  EXPECT_EQ(ConfigType::Bool().Check("maybe"), "not a boolean (true or false): 'maybe'");
  const ConfigType sink = ConfigType::Enum({"stdout", "null", "kafka"});
  EXPECT_EQ(sink.Check("null"), std::nullopt);
  EXPECT_EQ(sink.Check("Kafka"), "expected stdout, null or kafka, got 'Kafka'");
  const ConfigType windows = ConfigType::List(ConfigType::Int(1, 3600), 1);
  EXPECT_EQ(windows.Check("60, 300 ,"), std::nullopt);
  EXPECT_EQ(windows.Check("0,-5,abc"), "item 1 of 3: must be >= 1, got 0");
  EXPECT_EQ(windows.Check("60,abc"), "item 2 of 2: not an integer: 'abc'");
  EXPECT_EQ(windows.Check(" , "), "must list at least one item");
  EXPECT_EQ(ConfigType::List(ConfigType::Int(1, 3600)).Check(""), std::nullopt);
  EXPECT_EQ(windows.Describe(), "non-empty comma-separated list of integer in [1, 3600]");
}

TEST(ConfigTypeTest, AddressesAndTimes) {
  const ConfigType listen = ConfigType::HostPort();
  for (const char* good : {"127.0.0.1:9400", ":9400", "[::1]:0", "localhost:65535"}) {
    EXPECT_EQ(listen.Check(good), std::nullopt) << good;
  }
  for (const char* bad : {"9400x", "localhost", "host:65536", "host:", "::1:80", "a b:1"}) {
    EXPECT_NE(listen.Check(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(listen.Check(""), "must not be empty");
  EXPECT_EQ(listen.OrEmpty().Check(""), std::nullopt);
  EXPECT_EQ(ConfigType::Time().Check("2023-07-01 00:00:00+08:00"), std::nullopt);
  EXPECT_EQ(ConfigType::Time().Check("1688140800"), std::nullopt);
  EXPECT_EQ(ConfigType::Time().Check("yesterday"), "not unix seconds or ISO 8601 with an offset: 'yesterday'");
}

TEST(ConfigTypeTest, MessagesQuoteAShortPrintableStartOfTheValue) {
  const std::string huge(8 << 20, 'x');
  const std::optional<std::string> why = ConfigType::Int().Check(huge);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "not an integer: '" + std::string(64, 'x') + "...'");
  EXPECT_EQ(ConfigType::Bool().Check(std::string("a\nb\0c", 5)), "not a boolean (true or false): 'a\\x0ab\\x00c'");
}

TEST(ConfigTest, DeclaringAWrongDefaultOrTwoKeysWithOneVariableIsAProgrammingError) {
  Config c;
  EXPECT_THROW(c.Declare("run.queue_capacity", "0", "records", ConfigType::Int(1, 100)), std::logic_error);
  c.Declare("detect.a.b_c", "1", "one");
  EXPECT_THROW(c.Declare("detect.a_b.c", "1", "the same variable"), std::logic_error);
}

TEST(ConfigTest, ValidateReportsEveryWrongKeyWithTheFileAndLineThatSetIt) {
  Config c = MakeTypedConfig();
  const Status s = c.LoadYamlText(
      "replay:\n"
      "  window_s: -1\n"
      "  strict: maybe\n"
      "detect:\n"
      "  gpu_overheat.open_c: abc\n"
      "  util_drop.open_share: 1.5\n"
      "  failure_burst.windows_s: [300, 0]\n",
      "bad.yaml");
  ASSERT_TRUE(s.ok()) << s.message();  // loading checks names and shapes; values are Validate's
  EXPECT_EQ(c.Validate(), (std::vector<std::string>{
                              "bad.yaml:2: replay.window_s: must be >= 0, got -1",
                              "bad.yaml:3: replay.strict: not a boolean (true or false): 'maybe'",
                              "bad.yaml:5: detect.gpu_overheat.open_c: not a number: 'abc'",
                              "bad.yaml:6: detect.util_drop.open_share: must be <= 1, got 1.5",
                              "bad.yaml:7: detect.failure_burst.windows_s: item 2 of 2: must be > 0, got 0",
                          }));
}

TEST(ConfigTest, ValidateNamesTheFlagOrTheKeyWhenNoFileSetIt) {
  Config c = MakeTypedConfig();
  ASSERT_TRUE(c.Set("replay.sink", "file", "--sink").ok());
  ASSERT_TRUE(c.Set("replay.window_s", "x").ok());
  EXPECT_EQ(c.Validate(), (std::vector<std::string>{
                              "replay.window_s: not an integer: 'x'",
                              "--sink: expected stdout, null or kafka, got 'file'",
                          }));
  EXPECT_THROW(c.RequireValid("replay.sink"), std::invalid_argument);
  EXPECT_NO_THROW(c.RequireValid("replay.strict"));
}

TEST(ConfigTest, LoadReportsEveryProblemOfTheFileOnePerLine) {
  Config c = MakeTypedConfig();
  const Status s = c.LoadYamlText(
      "replay:\n"
      "  window_s: 5\n"
      "  sped: 1\n"
      "  window_s: 6\n"
      "  sink:\n"
      "    to: kafka\n"
      "  strict: [[true]]\n"
      "bogus:\n"
      "  x: 1\n"
      "export: 5\n",
      "many.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "many.yaml:3: replay.sped: unknown key (see `acmetrace config` for the documented keys)\n"
            "many.yaml:4: replay.window_s: set twice (first on line 2)\n"
            "many.yaml:5: replay.sink: must be a plain value or a list\n"
            "many.yaml:7: replay.strict: a list's items must be plain values\n"
            "many.yaml:8: bogus: unknown section (see `acmetrace config` for the documented keys)\n"
            "many.yaml:10: export: must be a map of keys");
}

TEST(ConfigTest, KeysThatAreNotPlainWordsAreErrorsNotCrashes) {
  Config c = MakeTypedConfig();
  Status s = c.LoadYamlText("replay:\n  ? [a, b]\n  : 1\n", "complex.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "complex.yaml:2: replay: a key name must be a plain word");
  s = c.LoadYamlText("? {a: 1}\n: 2\n", "complex.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "complex.yaml:1: a section name must be a plain word");
  s = c.LoadYamlText("replay:\n  \"win\\ndow\": 1\n", "escaped.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();  // one line, whatever the key holds
}

TEST(ConfigTest, DeepNestingIsAnErrorNotAStackOverflow) {
  Config c = MakeTypedConfig();
  const Status s = c.LoadYamlText("replay:\n  window_s: " + std::string(100'000, '['), "deep.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "deep.yaml:2: nested too deeply");
}

TEST(ConfigTest, EnvironmentVariableNames) {
  EXPECT_EQ(Config::EnvName("replay.speed"), "ACMETRACE_REPLAY_SPEED");
  EXPECT_EQ(Config::EnvName("detect.gpu_overheat.open_c"), "ACMETRACE_DETECT_GPU_OVERHEAT_OPEN_C");
  EXPECT_EQ(Config::EnvName("kafka.properties_file"), "ACMETRACE_KAFKA_PROPERTIES_FILE");
}

TEST(ConfigTest, EnvironmentSetsKeysAndErrorsNameTheVariable) {
  Config c = MakeTypedConfig();
  const char* envp[] = {"HOME=/root", "ACMETRACE_REPLAY_WINDOW_S=120", "ACMETRACE_DETECT_GPU_OVERHEAT_OPEN_C=hot",
                        "ACMETRACE_PROGRESS_MS=5", "ACMETRACE_BINARY=/bin/true", nullptr};
  ASSERT_TRUE(c.ApplyEnvironment(envp).ok());  // variables of no declared section are not ours
  EXPECT_EQ(c.GetInt("replay.window_s"), 120);
  EXPECT_EQ(c.Where("replay.window_s"), "ACMETRACE_REPLAY_WINDOW_S");
  EXPECT_EQ(c.Validate(),
            std::vector<std::string>{"ACMETRACE_DETECT_GPU_OVERHEAT_OPEN_C: not a number: 'hot'"});
}

TEST(ConfigTest, AMisspelledVariableOfADeclaredSectionIsAnError) {
  Config c = MakeTypedConfig();
  const char* envp[] = {"ACMETRACE_REPLAY_WINDOWS=5", "ACMETRACE_DETECT_GPU_OVERHEAT_OPENC=90", nullptr};
  EXPECT_TRUE(c.ApplyEnvironment(envp, {"ACMETRACE_REPLAY_WINDOWS", "ACMETRACE_DETECT_GPU_OVERHEAT_OPENC"}).ok());
  const Status s = c.ApplyEnvironment(envp);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "ACMETRACE_REPLAY_WINDOWS: no such configuration key (see `acmetrace config`)\n"
            "ACMETRACE_DETECT_GPU_OVERHEAT_OPENC: no such configuration key (see `acmetrace config`)");
}

TEST(ConfigTest, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  // The order the binary applies them in (apps/commands.cc LoadConfig): file, environment, flags.
  Config c = MakeTypedConfig();
  ASSERT_TRUE(c.LoadYamlText("replay:\n  window_s: 10\n  strict: true\n  sink: null\n", "f.yaml").ok());
  const char* envp[] = {"ACMETRACE_REPLAY_WINDOW_S=20", "ACMETRACE_REPLAY_STRICT=false", nullptr};
  ASSERT_TRUE(c.ApplyEnvironment(envp).ok());
  ASSERT_TRUE(c.Set("replay.window_s", "30", "--window").ok());
  EXPECT_EQ(c.GetInt("replay.window_s"), 30);           // flag over environment
  EXPECT_FALSE(c.GetBool("replay.strict"));               // environment over file
  EXPECT_EQ(c.GetString("replay.sink"), "null");          // file over default
  EXPECT_EQ(c.GetString("export.listen"), "127.0.0.1:9400");  // default
  EXPECT_EQ(c.Where("replay.window_s"), "--window");
  EXPECT_EQ(c.Where("replay.strict"), "ACMETRACE_REPLAY_STRICT");
  EXPECT_EQ(c.Where("replay.sink"), "f.yaml:4: replay.sink");
  EXPECT_EQ(c.Where("export.listen"), "export.listen");
}

}  // namespace
}  // namespace acmetrace::core

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

TEST(ConfigTest, UnknownSectionIsAnErrorNamingFileLineAndKey) {
  Config c = MakeConfig();
  const Status s = c.LoadYamlText("replay:\n  speed: 2\nprocess:\n  window_s: 60\n", "my.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("my.yaml:4: process.window_s:", 0), 0u) << s.message();
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
  ASSERT_TRUE(c.LoadYamlText("export:\n  listen:\n", "null.yaml").ok());
  EXPECT_EQ(c.GetString("export.listen"), "");
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
    const std::string entry = "  # " + k.help + "\n  " + name + ": " + value + "\n";
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

}  // namespace
}  // namespace acmetrace::core

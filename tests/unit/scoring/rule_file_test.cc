// Prometheus rule files as `acmetrace score` reads them: durations, groups, errors with file and line.
#include "acmetrace/scoring/rule_file.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

#include "test_files.h"

namespace acmetrace::scoring {
namespace {

int64_t Ms(std::string_view text) {
  core::Result<int64_t> d = ParseDurationMs(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? d.value() : -1;
}

TEST(DurationTest, ParsesPrometheusDurations) {
  EXPECT_EQ(Ms("0s"), 0);
  EXPECT_EQ(Ms("0"), 0);
  EXPECT_EQ(Ms("15s"), 15'000);
  EXPECT_EQ(Ms("1m30s"), 90'000);
  EXPECT_EQ(Ms("1h"), 3'600'000);
  EXPECT_EQ(Ms("2d"), 2 * 86'400'000LL);
  EXPECT_EQ(Ms("1w"), 7 * 86'400'000LL);
  EXPECT_EQ(Ms("1y"), 365 * 86'400'000LL);
  EXPECT_EQ(Ms("500ms"), 500);
  EXPECT_EQ(Ms("1m500ms"), 60'500);
  EXPECT_EQ(Ms("1h1m1s"), 3'661'000);
}

TEST(DurationTest, RejectsWhatPrometheusRejects) {
  for (const char* bad : {"", "5", "1x", "1s1m", "1m1m", "m", "-1s", "1.5m", "1 m", "1m "}) {
    EXPECT_FALSE(ParseDurationMs(bad).ok()) << "\"" << bad << "\"";
  }
}

TEST(DurationTest, FormatsAsPrometheusPrintsDurations) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(90'000), "1m30s");
  EXPECT_EQ(FormatDuration(3'600'000), "1h");
  EXPECT_EQ(FormatDuration(250), "250ms");
}

TEST(RuleFileTest, ReadsGroupsIntervalsForAndKeepFiringFor) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "r.yml",
                                     "groups:\n"
                                     "  - name: fast\n"
                                     "    interval: 15s\n"
                                     "    rules:\n"
                                     "      - record: job:up:sum\n"
                                     "        expr: sum(up)\n"
                                     "      - alert: Hot\n"
                                     "        expr: temp > 85\n"
                                     "        for: 1m30s\n"
                                     "        keep_firing_for: 5m\n"
                                     "        labels:\n"
                                     "          severity: warning\n"
                                     "          kind: gpu_overheat\n"
                                     "        annotations:\n"
                                     "          summary: hot\n"
                                     "  - name: default\n"
                                     "    rules:\n"
                                     "      - alert: Down\n"
                                     "        expr: up == 0\n");
  RuleSet rules;
  ASSERT_TRUE(LoadRuleFile(path, rules).ok());
  ASSERT_EQ(rules.alerts.size(), 2u);
  ASSERT_EQ(rules.records.size(), 1u);
  const AlertRule& hot = rules.alerts[0];
  EXPECT_EQ(hot.name, "Hot");
  EXPECT_EQ(hot.group, "fast");
  EXPECT_EQ(hot.line, 7);
  EXPECT_EQ(hot.interval_ms, 15'000);
  EXPECT_EQ(hot.for_ms, 90'000);
  EXPECT_EQ(hot.keep_firing_for_ms, 300'000);
  EXPECT_EQ(hot.labels.at("severity"), "warning");
  const AlertRule& down = rules.alerts[1];
  EXPECT_EQ(down.interval_ms, kDefaultEvaluationIntervalMs);
  EXPECT_EQ(down.for_ms, 0);
  EXPECT_EQ(rules.records[0].name, "job:up:sum");
}

// Each bad file gives "FILE:LINE: field: reason" with the line of the offending value.
struct BadRuleFile {
  const char* text;
  const char* expected;  // after "FILE:"
};

TEST(RuleFileTest, ErrorsNameFileLineAndField) {
  const BadRuleFile cases[] = {
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        for: 5x\n", "6: for: not a duration"},
      {"groups:\n  - name: g\n    interval: soon\n    rules: []\n", "3: interval: not a duration"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        exp: up\n", "5: exp: unknown field of a rule"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        for: 1m\n", "4: expr: missing"},
      {"groups:\n  - name: g\n    rules:\n      - expr: up\n", "4: alert: a rule has exactly one of"},
      {"groups:\n  - rules: []\n", "2: name: a group needs a name"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        keep_firing_for: [1]\n",
       "6: keep_firing_for: must be a duration"},
      {"groups:\n  - name: g\n    rules:\n     - alert: [\n", "yaml:"},
      {"rules: []\n", "1: rules: unknown field"},
  };
  const std::string dir = TestDir();
  for (const BadRuleFile& c : cases) {
    const std::string path = WriteFile(dir, "bad.yml", c.text);
    RuleSet rules;
    core::Status s = LoadRuleFile(path, rules);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.message().rfind(path + ":", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message() << "\nexpected: " << c.expected;
    EXPECT_TRUE(rules.alerts.empty());
  }
  RuleSet rules;
  EXPECT_NE(LoadRuleFile(dir + "/missing.yml", rules).message().find("cannot open"), std::string::npos);
}

TEST(RuleFileTest, KeysThatAreNoNamesAreOneLineErrorsNotExceptions) {
  // `? [a, b]` makes a key that is a list: yaml-cpp throws TypedBadConversion when it is read as a name.
  static const std::string deep(3000, '[');
  const BadRuleFile cases[] = {
      {"? [a, b]\n: x\n", "1: groups: a key must be a plain name"},
      {"groups:\n  - name: g\n    ? [a, b]\n    : x\n", "3: groups: a key must be a plain name"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        ? {k: v}\n        : x\n",
       "6: rules: a key must be a plain name"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels:\n          ? [a]\n"
       "          : x\n",
       "7: labels: a key must be a plain name"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        annotations:\n"
       "          ? [a]\n          : x\n",
       "7: annotations: a key must be a plain name"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels:\n          a-b: x\n",
       "7: labels: a-b is not a label name"},
      // promtool: "invalid label name: __name__", "invalid annotation name: a-b".
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels:\n          __name__: x\n",
       "7: labels: __name__ is the metric's name, not a label a rule sets"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        annotations:\n          a-b: x\n",
       "7: annotations: a-b is not an annotation name"},
      // Values Prometheus reads as strings or numbers: a list or a map is refused there (and an alias of a deep
      // one would be walked wherever it is used).
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        annotations:\n          a: [x]\n",
       "7: annotations.a: must be a string"},
      {"groups:\n  - name: g\n    limit: {a: 1}\n    rules: []\n", "3: limit: must be a number"},
      // An alias of its own ancestor: yaml-cpp builds a cycle, which a walk would follow until the stack ran out.
      {"groups: &a\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        annotations:\n          x: *a\n",
       "annotations.x: must be a string"},
      {"groups: &a\n  - name: g\n    limit: *a\n", "limit: must be a number"},
      {"groups: &a\n  - name: *a\n", "name: a group needs a non-empty name"},
      {"groups:\n  - name: g\n    source_tenants: [a, [b]]\n    rules: []\n",
       "3: source_tenants: must be a list of tenant names"},
      {"groups:\n  - name: g\n    rules:\n      - record: a b\n        expr: up\n", "4: record: must be a metric name"},
      {"groups:\n  - name: g\n    rules: []\n  - name: g\n    rules: []\n",
       "4: name: group \"g\" is repeated in the same file (first on line 2)"},
      {"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        expr: down\n",
       "6: expr: given twice (first on line 5)"},
      {"groups:\n  - name: g\n    interval: 1ms\n    rules: []\n", "3: interval: 1ms is below the minimum of 1s"},
      {"groups:\n  - name: g\n    interval: 999ms\n    rules: []\n", "3: interval: 999ms is below the minimum of 1s"},
      {deep.c_str(), "yaml:"},
      {"groups: [\n", "yaml:"},
      {"\xff\xfe\x00g", ""},
  };
  const std::string dir = TestDir();
  for (const BadRuleFile& c : cases) {
    const std::string path = WriteFile(dir, "bad.yml", c.text);
    RuleSet rules;
    core::Status s = core::Status::Ok();
    EXPECT_NO_THROW(s = LoadRuleFile(path, rules)) << c.text;
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.message().rfind(path + ":", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message() << "\nexpected: " << c.expected;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    EXPECT_LT(s.message().size(), path.size() + 300) << s.message();
  }
  // The same group name in two files is no error (Prometheus keeps groups per file).
  RuleSet rules;
  const std::string one = WriteFile(dir, "one.yml", "groups:\n  - name: g\n    rules: []\n");
  const std::string two = WriteFile(dir, "two.yml", "groups:\n  - name: g\n    interval: 1s\n    rules: []\n");
  EXPECT_TRUE(LoadRuleFile(one, rules).ok());
  EXPECT_TRUE(LoadRuleFile(two, rules).ok());
}

TEST(RuleFileTest, OnlyARegularFileOfBoundedSizeIsRead) {
  const std::string dir = TestDir();
  RuleSet rules;
  EXPECT_NE(LoadRuleFile(dir, rules).message().find("a directory, not a rule file"), std::string::npos);
  // A symlink to /dev/zero would be read forever; a FIFO would hang at open.
  std::filesystem::create_symlink("/dev/zero", dir + "/zero.yml");
  EXPECT_NE(LoadRuleFile(dir + "/zero.yml", rules).message().find("not a regular file"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir + "/fifo.yml").c_str(), 0600), 0);
  EXPECT_NE(LoadRuleFile(dir + "/fifo.yml", rules).message().find("not a regular file"), std::string::npos);
  const std::string big = WriteFile(dir, "big.yml", "# " + std::string(kMaxRuleFileBytes, 'x') + "\n");
  EXPECT_NE(LoadRuleFile(big, rules).message().find("more than a rule file's limit"), std::string::npos);
  EXPECT_NE(LoadRuleFile(dir + "/missing.yml", rules).message().find("No such file or directory"), std::string::npos);
}

TEST(RuleFileTest, ShippedRulesLoad) {
  // Built into the binary: the same files as configs/prometheus/rules, whatever the working directory.
  RuleSet rules;
  ASSERT_EQ(ShippedRules().size(), 4u);
  for (const RuleFileText& file : ShippedRules()) {
    ASSERT_TRUE(LoadRuleText(file, rules).ok()) << file.name;
    RuleSet from_disk;
    const std::string path =
        std::string(ACMETRACE_FIXTURES) + "/../../" + file.name;  // tests/fixtures/../../configs/...
    ASSERT_TRUE(LoadRuleFile(path, from_disk).ok()) << path;
  }
  EXPECT_EQ(rules.alerts.size(), 21u);
  EXPECT_EQ(rules.records.size(), 3u);
}

TEST(RuleFileTest, KindsComeFromTheKindLabelOrTheExpressionsMatchers) {
  const std::set<std::string> known = {"gpu_overheat", "xid_error", "util_drop"};
  AlertRule rule;
  rule.expr = "max by (cluster, kind, subject) (acmetrace_anomaly_active{kind=\"gpu_overheat\"}) > 0";
  EXPECT_EQ(KindsOfRule(rule, known), (std::set<std::string>{"gpu_overheat"}));
  rule.expr = "acmetrace_anomaly_active{cluster=\"seren\", kind =~ \"xid_error|util_drop|other\"} > 0";
  EXPECT_EQ(KindsOfRule(rule, known), (std::set<std::string>{"util_drop", "xid_error"}));
  // A job metric's kind="gpu" is no incident kind.
  rule.expr = "increase(acmetrace_jobs_finished_total{kind=\"gpu\"}[10m]) > 20";
  EXPECT_TRUE(KindsOfRule(rule, known).empty());
  // The rule's own kind label wins.
  rule.labels["kind"] = "failure_burst";
  EXPECT_EQ(KindsOfRule(rule, known), (std::set<std::string>{"failure_burst"}));
}

TEST(RuleFileTest, FindsTheRecordingRulesAnAlertUses) {
  RuleSet rules;
  rules.records.push_back({"dcgm:xid:count", "g", "f", 1});
  rules.records.push_back({"dcgm:xid", "g", "f", 2});
  AlertRule alert;
  alert.expr = "dcgm:xid:count{xid!=\"0\"} > 0";
  EXPECT_EQ(RecordingRulesUsed(alert, rules), std::vector<std::string>{"dcgm:xid:count"});
}

TEST(RuleFileTest, BytesThatAreNotUtf8AreAnErrorNamingTheirLine) {
  // yaml-cpp took them as they came, and a copy written back (acmetrace rules) said something else
  // (rule_scaler_fuzz); Prometheus refuses such a file.
  RuleSet rules;
  const core::Status s = LoadRuleText(
      {"r.yml", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels: {kind: \"p\x9c\xa3i\"}\n"},
      rules);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "r.yml:6: not UTF-8");
}

TEST(RuleFileTest, ControlCharactersAreAnErrorNamingTheirLineAsPrometheusRefusesThem) {
  // yaml-cpp read "nod\0_failure" as another label value, and the copy `acmetrace rules` wrote was not UTF-8
  // (rule_scaler_fuzz); Prometheus's YAML reader says "control characters are not allowed".
  const std::string head = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n";
  struct Case {
    std::string bytes;
    std::string code;
  };
  for (const Case& c : {Case{std::string("\0", 1), "U+0000"}, Case{"\x1b", "U+001B"}, Case{"\x7f", "U+007F"},
                        Case{"\xc2\x80", "U+0080"}, Case{"\xc2\x9f", "U+009F"}, Case{"\xef\xbf\xbe", "U+FFFE"},
                        Case{"\xef\xbf\xbf", "U+FFFF"}}) {
    RuleSet rules;
    const core::Status s = LoadRuleText({"r.yml", head + "        labels: {kind: \"nod" + c.bytes + "_failure\"}\n"}, rules);
    ASSERT_FALSE(s.ok()) << c.code;
    EXPECT_EQ(s.message(), "r.yml:6: character " + c.code +
                               " is not allowed in YAML (nor any control character but tab and line breaks)");
  }
  // What YAML allows: tab, CR LF, U+00A0, U+FFFD and U+10000 up.
  RuleSet rules;
  ASSERT_TRUE(LoadRuleText({"r.yml", head + "        labels: {kind: \"a\tb \xc2\xa0 \xef\xbf\xbd \xf0\x9f\x98\x80\"}\r\n"},
                           rules)
                  .ok());
  ASSERT_EQ(rules.alerts.size(), 1u);
}

TEST(RuleFileTest, TagsOfAnotherMeaningToPrometheusAreAnErrorNamingTheirLine) {
  const std::string head = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels:\n";
  for (const std::string tag : {"binary", "null", "int", "timestamp"}) {
    RuleSet rules;
    const core::Status s = LoadRuleText({"r.yml", head + "          a: x\n          b: !!" + tag + " 5\n"}, rules);
    ASSERT_FALSE(s.ok()) << tag;
    EXPECT_EQ(s.message(), "r.yml:8: yaml: the tag !!" + tag +
                               " is not read here as Prometheus reads it: write the value without it");
  }
  // A string's own tag, a local tag, and a map's own tag mean what the value says.
  RuleSet rules;
  ASSERT_TRUE(LoadRuleText({"r.yml", head + "          a: !!str 1\n          b: !local x\n          c: ! 2\n"}, rules).ok());
  EXPECT_EQ(rules.alerts.at(0).labels, (Labels{{"a", "1"}, {"b", "x"}, {"c", "2"}}));
  ASSERT_TRUE(LoadRuleText({"r.yml", "!!map\ngroups: !!seq []\n"}, rules).ok());
}

TEST(RuleFileTest, AliasesThatDoubleAtEachLevelAreRefusedWithoutBeingWalked) {
  // 2^40 leaves if every alias were walked where it is used (a "billion laughs"): refused at the value that holds
  // them, where Prometheus wants a string.
  std::string text = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        annotations:\n";
  text += "          a0: &a0 [x, x]\n";
  for (int i = 1; i <= 40; ++i) {
    text += "          a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + "]\n";
  }
  RuleSet rules;
  const core::Status s = LoadRuleText({"r.yml", text}, rules);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "r.yml:7: annotations.a0: must be a string");
}

TEST(RuleFileTest, TheLineBreaksOfYaml11AreAnErrorForPrometheusReadsThemAsLineBreaks) {
  // U+0085, U+2028 and U+2029 end a line for Prometheus's reader (yaml.v3) and not for yaml-cpp: a label value
  // "a<U+0085>b" would be one value here and a folded one there. In a comment they would end the comment there.
  const std::string head = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n";
  struct Case {
    std::string bytes;
    std::string message;
  };
  for (const Case& c : {Case{"\xc2\x85", "character U+0085 is a line break to Prometheus's YAML reader, not to "
                                          "acmetrace's: write it as \\N in double quotes"},
                        Case{"\xe2\x80\xa8", "character U+2028 is a line break to Prometheus's YAML reader, not to "
                                              "acmetrace's: write it as \\L in double quotes"},
                        Case{"\xe2\x80\xa9", "character U+2029 is a line break to Prometheus's YAML reader, not to "
                                              "acmetrace's: write it as \\P in double quotes"}}) {
    for (const std::string& line : {"        labels: {kind: a" + c.bytes + "b}\n", "        # a" + c.bytes + "b\n"}) {
      RuleSet rules;
      const core::Status s = LoadRuleText({"r.yml", head + line}, rules);
      ASSERT_FALSE(s.ok()) << line;
      EXPECT_EQ(s.message(), "r.yml:6: " + c.message);
    }
  }
}

TEST(RuleFileTest, EscapesMeanWhatPrometheusDecodesThemTo) {
  // yaml-cpp 0.7 decodes \N and \_ to the single bytes 0x85 and 0xA0; yaml.v3 to U+0085 and U+00A0 (in UTF-8).
  const std::string head = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels:\n";
  RuleSet rules;
  ASSERT_TRUE(LoadRuleText({"r.yml", head + "          a: \"1\\N2\\_3\\L4\\P5\\x7f6\\u00e97\\U0001F6008\\ufffe9\\e\"\n"}, rules)
                  .ok());
  ASSERT_EQ(rules.alerts.size(), 1u);
  EXPECT_EQ(rules.alerts[0].labels.at("a"),
            "1\xc2\x85" "2\xc2\xa0" "3\xe2\x80\xa8" "4\xe2\x80\xa9" "5\x7f" "6\xc3\xa9" "7\xf0\x9f\x98\x80" "8\xef\xbf\xbe" "9\x1b");
  // Escapes of a surrogate or of a code point above U+10FFFF: refused, as yaml.v3 refuses them ("found invalid
  // Unicode character escape code"), here in yaml-cpp's words.
  for (const std::string escape : {"\\ud800", "\\uDFFF", "\\U00110000", "\\UFFFFFFFF"}) {
    RuleSet refused;
    const core::Status s = LoadRuleText({"r.yml", head + "          a: ok\n          b: \"x" + escape + "\"\n"}, refused);
    ASSERT_FALSE(s.ok()) << escape;
    EXPECT_EQ(s.message().rfind("r.yml:8: yaml: invalid unicode: ", 0), 0u) << s.message();
  }
}

}  // namespace
}  // namespace acmetrace::scoring

// The rule scaler as a user of `acmetrace rules` checks it: every span of a rule divided by the speed,
// strings and comments left alone, what cannot be scaled warned, and the command's errors.
#include "acmetrace/rules/rule_scaler.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "test_files.h"

namespace acmetrace::rules {
namespace {

std::string Scale(std::string_view expr, double speed = 60) {
  core::Result<ScaledExpression> scaled = ScaleExpression(expr, speed);
  EXPECT_TRUE(scaled.ok()) << scaled.status().message();
  return scaled.ok() ? scaled.value().expr : "";
}

std::vector<std::string> Warnings(std::string_view expr, double speed = 60) {
  core::Result<ScaledExpression> scaled = ScaleExpression(expr, speed);
  EXPECT_TRUE(scaled.ok()) << scaled.status().message();
  return scaled.ok() ? scaled.value().warnings : std::vector<std::string>{};
}

bool AnyContains(const std::vector<std::string>& lines, std::string_view needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(ScaleDurationTest, DividesExactlyOrRoundsToAMillisecondAndSaysSo) {
  EXPECT_EQ(ScaleDurationMs(3'600'000, 60).value().ms, 60'000);  // 1h -> 1m
  EXPECT_TRUE(ScaleDurationMs(3'600'000, 60).value().rounding.empty());
  EXPECT_EQ(ScaleDurationMs(90'000, 60).value().ms, 1'500);  // 1m30s -> 1s500ms
  EXPECT_EQ(ScaleDurationMs(15'000, 60).value().ms, 250);
  EXPECT_EQ(ScaleDurationMs(0, 60).value().ms, 0);  // for: 0s stays 0s
  EXPECT_TRUE(ScaleDurationMs(0, 60).value().rounding.empty());
  const ScaledDuration third = ScaleDurationMs(60'000, 7).value();  // 8571.43 ms
  EXPECT_EQ(third.ms, 8'571);
  EXPECT_NE(third.rounding.find("8571.429ms: rounded to 8s571ms"), std::string::npos) << third.rounding;
  const ScaledDuration tiny = ScaleDurationMs(500, 1e6).value();  // never 0: a zero range is no range
  EXPECT_EQ(tiny.ms, 1);
  EXPECT_NE(tiny.rounding.find("raised to 1ms"), std::string::npos) << tiny.rounding;
  EXPECT_EQ(ScaleDurationMs(60'000, 0.5).value().ms, 120'000);  // slower than the trace: longer
  EXPECT_FALSE(ScaleDurationMs(kMaxDurationMs, 0.001).ok());    // beyond Prometheus's 292 years
}

TEST(ScaleExpressionTest, RangeSelectorsSubqueriesAndOffsets) {
  EXPECT_EQ(Scale("rate(x[5m])"), "rate(x[5s])");
  EXPECT_EQ(Scale("increase(x{a=\"b\"}[1h30m])"), "increase(x{a=\"b\"}[1m30s])");
  EXPECT_EQ(Scale("max_over_time(x[1h:5m])"), "max_over_time(x[1m:5s])");
  EXPECT_EQ(Scale("max_over_time(x[1h:])"), "max_over_time(x[1m:])");  // default step: the scaled global
  EXPECT_EQ(Scale("max_over_time(x[ 10m : 1m ])"), "max_over_time(x[10s:1s])");
  EXPECT_EQ(Scale("x offset 10m"), "x offset 10s");
  EXPECT_EQ(Scale("x offset -10m"), "x offset -10s");
  EXPECT_EQ(Scale("sum(x[5m] OFFSET 1h)"), "sum(x[5s] OFFSET 1m)");
  EXPECT_EQ(Scale("avg_over_time(x[90s])"), "avg_over_time(x[1s500ms])");
  EXPECT_EQ(Scale("x[500ms]", 2), "x[250ms]");
  EXPECT_EQ(Scale("x[1d]", 0.5), "x[2d]");
  // What is not a span is copied byte for byte: numbers, names with digits, spacing.
  EXPECT_EQ(Scale("clamp_min(x_5m / 6, 1e3) > 0x1f  and on (cluster) y"),
            "clamp_min(x_5m / 6, 1e3) > 0x1f  and on (cluster) y");
  EXPECT_TRUE(Warnings("increase(x[5m]) > 3 * y offset 10m").empty());
}

TEST(ScaleExpressionTest, StringsAndCommentsAreLeftAlone) {
  // A '[' in a regex matcher, an offset in a label value, a range in a comment: not PromQL spans.
  EXPECT_EQ(Scale("x{re=~\"[5m]+\", o=\"offset 5m\"}[5m]"), "x{re=~\"[5m]+\", o=\"offset 5m\"}[5s]");
  EXPECT_EQ(Scale("x{re=~'a\\'[1h]'}[1h]"), "x{re=~'a\\'[1h]'}[1m]");
  EXPECT_EQ(Scale("x{re=~`[1h]\\`}[1h]"), "x{re=~`[1h]\\`}[1m]");
  EXPECT_EQ(Scale("rate(x[5m]) # was [10m], offset 1h\n  > 0"), "rate(x[5s]) # was [10m], offset 1h\n  > 0");
  // A label or grouping named like a keyword or a function is not one.
  EXPECT_EQ(Scale("sum by (offset, hour) (x{offset=\"1\"})"), "sum by (offset, hour) (x{offset=\"1\"})");
  EXPECT_TRUE(Warnings("sum by (hour) (x{time=\"1\"})").empty());
}

TEST(ScaleExpressionTest, WarnsWhatKeepsItsWallClockMeaning) {
  EXPECT_TRUE(AnyContains(Warnings("time() - x > 300"), "time() reads the wall clock"));
  EXPECT_TRUE(AnyContains(Warnings("timestamp(x) < 5"), "timestamp() reads the wall clock"));
  EXPECT_TRUE(AnyContains(Warnings("hour() == 3 and day_of_week() > 5"), "hour() reads the wall clock"));
  EXPECT_TRUE(AnyContains(Warnings("hour() == 3 and day_of_week() > 5"), "day_of_week() reads the wall clock"));
  EXPECT_TRUE(AnyContains(Warnings("rate(x[5m]) > 10"), "rate() is per second of wall time: at speed 60 it is 60 times"));
  EXPECT_TRUE(AnyContains(Warnings("predict_linear(x[1h], 3600) < 0"), "predict_linear()'s second argument"));
  EXPECT_EQ(Scale("predict_linear(x[1h], 3600)"), "predict_linear(x[1m], 3600)");  // the range still is
  EXPECT_TRUE(AnyContains(Warnings("x @ 1688169600"), "@ modifier"));
  EXPECT_EQ(Scale("x[5m] @ start()"), "x[5s] @ start()");
  EXPECT_TRUE(AnyContains(Warnings("x[5m] @ start()"), "@ start()"));
  // Each once per expression.
  EXPECT_EQ(Warnings("rate(x[5m]) / rate(y[5m])").size(), 1u);
  // A bracket that is not a range of durations is left and warned, not mangled.
  EXPECT_EQ(Scale("x[300]"), "x[300]");
  EXPECT_TRUE(AnyContains(Warnings("x[300]"), "[300] is not a range of Prometheus durations"));
}

TEST(ScaleExpressionTest, RoundingIsWarnedAndAZeroIsNeverWritten) {
  EXPECT_EQ(Scale("x[1m]", 7), "x[8s571ms]");
  EXPECT_TRUE(AnyContains(Warnings("x[1m]", 7), "1m / 7 is 8571.429ms: rounded to 8s571ms"));
  EXPECT_EQ(Scale("x[1ms]", 1000), "x[1ms]");
  EXPECT_TRUE(AnyContains(Warnings("x[1ms]", 1000), "raised to 1ms"));
}

constexpr const char* kRuleFile = R"(# Leading comment: what the file is.
# Second line.
groups:
  - name: g1
    interval: 1m
    rules:
      # a comment inside: lost in the copy
      - alert: Hot
        expr: max by (gpu) (temp{re=~"[0-9]+"}) >= 85
        for: 1m
        keep_firing_for: 30s
        labels:
          severity: warning
          kind: gpu_overheat
          number: "1"
        annotations:
          summary: "GPU {{ $labels.gpu }} at {{ $value }} C"
      - record: r:x:increase10m
        expr: |
          sum by (cluster) (
            increase(x[10m])   # ten minutes
          )
      - alert: Clock
        expr: time() - x offset 5m > 300
  - name: g2
    rules:
      - alert: Plain
        expr: up == 0
)";

TEST(ScaleRuleFileTest, ScalesEveryFieldAndKeepsTheRest) {
  const scoring::RuleFileText file{"dir/r.yml", kRuleFile};
  core::Result<ScaledRuleFile> scaled = ScaleRuleFile(file, 60, "configs/r.yml");
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  const std::string& text = scaled.value().text;
  EXPECT_EQ(text.rfind("# Generated by `acmetrace rules --speed 60` from configs/r.yml", 0), 0u) << text;
  EXPECT_NE(text.find("Comments inside the groups are not copied"), std::string::npos) << text;
  EXPECT_NE(text.find("# Leading comment: what the file is.\n# Second line.\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("a comment inside"), std::string::npos) << text;
  // The copy is a rule file the scoring parser reads, with the spans divided.
  scoring::RuleSet rules;
  ASSERT_TRUE(scoring::LoadRuleText({"copy.yml", text}, rules).ok()) << text;
  ASSERT_EQ(rules.alerts.size(), 3u);
  EXPECT_EQ(rules.alerts[0].interval_ms, 1'000);
  EXPECT_EQ(rules.alerts[0].for_ms, 1'000);
  EXPECT_EQ(rules.alerts[0].keep_firing_for_ms, 500);
  EXPECT_EQ(rules.alerts[0].expr, "max by (gpu) (temp{re=~\"[0-9]+\"}) >= 85");
  EXPECT_EQ(rules.alerts[0].labels.at("kind"), "gpu_overheat");
  EXPECT_EQ(rules.alerts[1].expr, "time() - x offset 5s > 300");
  EXPECT_EQ(rules.alerts[2].interval_ms, scoring::kDefaultEvaluationIntervalMs);  // no interval: none added
  const YAML::Node root = YAML::Load(text);
  const YAML::Node rule = root["groups"][0]["rules"][0];
  EXPECT_EQ(rule["annotations"]["summary"].Scalar(), "GPU {{ $labels.gpu }} at {{ $value }} C");
  EXPECT_EQ(rule["labels"]["number"].Tag(), "!");  // quoted in the source, quoted in the copy
  EXPECT_EQ(root["groups"][0]["rules"][1]["expr"].Scalar(),
            "sum by (cluster) (\n  increase(x[10s])   # ten minutes\n)\n");
  // The warning names file, line, group and rule.
  ASSERT_EQ(scaled.value().warnings.size(), 1u);
  EXPECT_EQ(scaled.value().warnings[0].rfind("dir/r.yml:23: group g1, rule Clock: expr: time() reads the wall clock", 0),
            0u)
      << scaled.value().warnings[0];
}

TEST(ScaleRuleFileTest, EveryValueReadsBackAsItWas) {
  // A multi-line value without a final line feed, control characters, a quoted number, a first line that
  // starts with a space: a literal block would change each of them.
  const std::string source =
      "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: x[5m]\n        labels:\n"
      "          a: \"pipe\\0line\"\n          b: \"one\\ntwo\"\n          c: \" lead\\nx\\n\"\n          d: \"1\"\n"
      "          e: \"tab\\there\"\n";
  scoring::RuleSet before;
  ASSERT_TRUE(scoring::LoadRuleText({"s.yml", source}, before).ok());
  core::Result<ScaledRuleFile> scaled = ScaleRuleFile({"s.yml", source}, 60, "s.yml");
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  scoring::RuleSet after;
  ASSERT_TRUE(scoring::LoadRuleText({"copy.yml", scaled.value().text}, after).ok()) << scaled.value().text;
  EXPECT_EQ(after.alerts.at(0).labels, before.alerts.at(0).labels) << scaled.value().text;
  EXPECT_EQ(before.alerts.at(0).labels.at("a"), std::string("pipe\0line", 9));
  EXPECT_EQ(after.alerts.at(0).expr, "x[5s]");
}

TEST(ScaleRuleFileTest, EveryCharacterAnEscapeCanHoldReadsBackAsItWas) {
  // Found by rule_scaler_fuzz: yaml-cpp's writer turned noncharacters (U+FFFE, U+FDD0, U+10FFFF) and its own
  // reading of \N and \_ into U+FFFD, and wrote DEL and C1 controls raw, which YAML forbids. Each class here, in
  // a label value, a label name's value, the alert's name, an annotation and a string of the expression; and
  // the text the copy uses for its own double-quoted scalars, as a plain value.
  const std::string escapes =
      "\\N \\_ \\L \\P \\x7f \\x80 \\x9f \\ufeff \\ufdd0 \\ufffe \\uffff \\U0001FFFE \\U0010FFFF \\0 \\e \\t \\r \\\" \\\\ "
      "\\u00e9 \\U0001F600 end";
  const std::string source = "groups:\n  - name: g\n    rules:\n      - alert: \"A " + escapes +
                             "\"\n        expr: 'x{a=\"\\ufdd0\"}[5m] > 0'\n        labels:\n          a: \"" + escapes +
                             "\"\n          b: acmetrace-double-quoted-0\n          c: \"acmetrace-double-quoted-1\"\n"
                             "        annotations:\n          s: \"" + escapes + "\"\n";
  scoring::RuleSet before;
  ASSERT_TRUE(scoring::LoadRuleText({"s.yml", source}, before).ok());
  for (const double speed : {1.0, 60.0}) {
    core::Result<ScaledRuleFile> scaled = ScaleRuleFile({"s.yml", source}, speed, "s.yml");
    ASSERT_TRUE(scaled.ok()) << scaled.status().message();
    const std::string& copy = scaled.value().text;
    EXPECT_EQ(copy.find("\xef\xbf\xbd"), std::string::npos) << copy;  // no U+FFFD
    scoring::RuleSet after;
    const core::Status reloaded = scoring::LoadRuleText({"copy.yml", copy}, after);
    ASSERT_TRUE(reloaded.ok()) << reloaded.message() << "\n" << copy;
    ASSERT_EQ(after.alerts.size(), 1u);
    EXPECT_EQ(after.alerts[0].name, before.alerts[0].name) << copy;
    EXPECT_EQ(after.alerts[0].labels, before.alerts[0].labels) << copy;
    EXPECT_EQ(after.alerts[0].expr, speed == 1 ? before.alerts[0].expr : "x{a=\"\\ufdd0\"}[5s] > 0");
  }
  const scoring::Labels& labels = before.alerts[0].labels;
  EXPECT_EQ(labels.at("a").substr(0, 16), "\xc2\x85 \xc2\xa0 \xe2\x80\xa8 \xe2\x80\xa9 \x7f ");
  EXPECT_EQ(labels.at("b"), "acmetrace-double-quoted-0");
}

TEST(ScaleRuleFileTest, AQuotedKeyLongerThanYamlsImplicitKeysIsWrittenAsALongKey) {
  // YAML (and Prometheus's reader) allows an implicit key of at most 1024 characters: a longer one is `? KEY`.
  const std::string name(1100, 'k');
  const std::string source = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels:\n"
                             "          ? \"" + name + "\"\n          : v\n          short: \"" + name + "\"\n";
  core::Result<ScaledRuleFile> scaled = ScaleRuleFile({"s.yml", source}, 1, "s.yml");
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  const std::string& copy = scaled.value().text;
  EXPECT_NE(copy.find("? \"" + name + "\"\n"), std::string::npos) << copy;
  EXPECT_NE(copy.find("short: \"" + name + "\"\n"), std::string::npos) << copy;  // a value stays where it is
  scoring::RuleSet after;
  ASSERT_TRUE(scoring::LoadRuleText({"copy.yml", copy}, after).ok());
  EXPECT_EQ(after.alerts.at(0).labels.at(name), "v");
}

TEST(ScaleRuleFileTest, AnAliasIsScaledOnceNotOncePerUse) {
  // yaml-cpp shares an anchored node with its aliases: scaling it in place for each use divided it by the speed
  // twice (`for: &f 60m`, `for: *f` at speed 60: 1s and 1s).
  const std::string source =
      "groups:\n  - name: g\n    interval: &i 1m\n    rules:\n"
      "      - alert: A\n        expr: &e rate(x[60m]) > 0\n        for: &f 60m\n"
      "      - alert: B\n        expr: *e\n        for: *f\n        keep_firing_for: *f\n"
      "      - &c\n        alert: C\n        expr: y[30m]\n        for: 30m\n"
      "      - *c\n"
      "  - name: h\n    interval: *i\n    rules: []\n";
  core::Result<ScaledRuleFile> scaled = ScaleRuleFile({"s.yml", source}, 60, "s.yml");
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  scoring::RuleSet after;
  ASSERT_TRUE(scoring::LoadRuleText({"copy.yml", scaled.value().text}, after).ok()) << scaled.value().text;
  ASSERT_EQ(after.alerts.size(), 4u);
  for (const scoring::AlertRule& a : after.alerts) {
    EXPECT_EQ(a.interval_ms, 1000) << a.name;
    EXPECT_EQ(a.expr, a.name == "C" ? "y[30s]" : "rate(x[1m]) > 0") << a.name;
    EXPECT_EQ(a.for_ms, a.name == "C" ? 30'000 : 60'000) << a.name;
  }
  EXPECT_EQ(after.alerts[1].keep_firing_for_ms, 60'000);
}

TEST(ScaleRuleFileTest, RoundedDurationsAreWarnedWithTheirPlace) {
  const scoring::RuleFileText file{"r.yml", kRuleFile};
  core::Result<ScaledRuleFile> scaled = ScaleRuleFile(file, 7, "r.yml");
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  EXPECT_TRUE(AnyContains(scaled.value().warnings, "r.yml:5: group g1: interval 1m / 7 is 8571.429ms"));
  EXPECT_TRUE(AnyContains(scaled.value().warnings, "r.yml:8: group g1, rule Hot: for 1m / 7 is"));
  EXPECT_TRUE(AnyContains(scaled.value().warnings, "rule Hot: keep_firing_for 30s / 7 is 4285.714ms"));
}

TEST(ScaleRuleFileTest, BadFilesFailWithTheParsersMessage) {
  auto error = [](const std::string& text) {
    core::Result<ScaledRuleFile> scaled = ScaleRuleFile({"bad.yml", text}, 60, "bad.yml");
    return scaled.ok() ? std::string("(accepted)") : scaled.status().message();
  };
  EXPECT_EQ(error("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: x\n        for: 5 minutes\n")
                .rfind("bad.yml:6: for: not a duration", 0),
            0u);
  EXPECT_EQ(error("groups: [").rfind("bad.yml:1: yaml:", 0), 0u) << error("groups: [");
  EXPECT_EQ(error("? [a, b]\n: 1\n"), "bad.yml:1: groups: a key must be a plain name, not a list or a map");
  EXPECT_EQ(error(std::string(100000, '[')).rfind("bad.yml", 0), 0u);  // nesting: an error, not a crash
}

TEST(PrometheusSnippetTest, IntervalsAreTheTracesSamplesAtSpeed) {
  EXPECT_EQ(RecommendedIntervalMs(60).ms, 250);
  EXPECT_EQ(RecommendedIntervalMs(1).ms, 15'000);
  EXPECT_EQ(PrometheusSnippet(60, "rules-60x/*.yml"),
            "global:\n"
            "  scrape_interval: 250ms       # 15s / 60: every 15 s sample of the trace is scraped\n"
            "  scrape_timeout: 250ms\n"
            "  evaluation_interval: 250ms\n"
            "rule_files:\n"
            "  - rules-60x/*.yml\n");
}

// The command: a user's invocation, its exit codes and messages.
ShellOutput Rules(const std::string& args) {
  return RunShellCapture(std::string(ACMETRACE_BINARY) + " rules " + args + " 2>&1");
}

TEST(RulesCommandTest, WritesScaledCopiesAndPrintsTheIntervals) {
  const std::string dir = TestDir();
  const std::string source = WriteFile(dir, "r.yml", kRuleFile);
  const ShellOutput run = Rules("--speed 60 --out " + dir + "/out " + source);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("rules: " + source + ":23: group g1, rule Clock: expr: time()"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("scrape_interval: 250ms"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("  - " + dir + "/out/*.yml"), std::string::npos) << run.out;
  scoring::RuleSet rules;
  ASSERT_TRUE(scoring::LoadRuleFile(dir + "/out/r.yml", rules).ok());
  EXPECT_EQ(rules.alerts[0].for_ms, 1'000);
}

TEST(RulesCommandTest, UsageErrorsExit2AndBadFilesExit1) {
  const std::string dir = TestDir();
  const std::string source = WriteFile(dir, "r.yml", kRuleFile);
  for (const char* speed : {"max", "0", "-1", "abc", "1e10", "0.0001", "nan"}) {
    const ShellOutput run = Rules(std::string("--speed ") + speed + " --out " + dir + "/o " + source);
    EXPECT_EQ(run.exit_code, 2) << speed << ": " << run.out;
    EXPECT_NE(run.out.find("--speed"), std::string::npos) << run.out;
  }
  EXPECT_EQ(Rules("--out " + dir + "/o " + source).exit_code, 2);  // --speed is required
  EXPECT_EQ(Rules("--speed 60 --out " + dir + " " + source).exit_code, 2);  // would overwrite its source
  const std::string twin = WriteFile(dir + "/sub", "r.yml", kRuleFile);
  const ShellOutput twins = Rules("--speed 60 --out " + dir + "/o " + source + " " + twin);
  EXPECT_EQ(twins.exit_code, 2) << twins.out;
  const std::string bad = WriteFile(dir, "bad.yml", "groups:\n  - name: g\n    interval: soon\n");
  const ShellOutput parse = Rules("--speed 60 --out " + dir + "/o " + source + " " + bad);
  EXPECT_EQ(parse.exit_code, 1) << parse.out;
  EXPECT_NE(parse.out.find(bad + ":3: interval: not a duration"), std::string::npos) << parse.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/o/r.yml"));  // nothing written when one file is bad
  EXPECT_EQ(Rules("--speed 60 --out " + dir + "/o " + dir + "/missing.yml").exit_code, 1);
  EXPECT_EQ(Rules("--speed 60 --out " + dir + "/o /dev/zero").exit_code, 1);
}

}  // namespace
}  // namespace acmetrace::rules

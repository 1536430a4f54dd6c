// The three views of a run: the JSON shape the issue fixes, the table, and the self-contained page.
#include "acmetrace/scoring/report.h"

#include "acmetrace/scoring/baseline.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z
constexpr int64_t kMin = 60'000;

ScoreReport Report() {
  ScoreReport report;
  report.from_ms = kT0;
  report.to_ms = kT0 + 600 * kMin;
  report.incidents = {{"seren", "gpu_overheat", "10.140.1.10-3", kT0 + 60 * kMin, kT0 + 70 * kMin},
                      {"kalos", "util_drop", "kalos", kT0 + 300 * kMin, kT0 + 320 * kMin}};
  RuleFirings hot;
  hot.rule = "GpuHot";
  hot.group = "dcgm-gpu";
  hot.expr = "max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) >= 85";
  hot.file = "rules.yml";
  hot.line = 7;
  hot.for_ms = kMin;
  hot.interval_ms = kMin;
  hot.intervals = {{{{"cluster", "seren"}, {"Hostname", "10.140.1.10"}, {"gpu", "3"}}, kT0 + 62 * kMin,
                    kT0 + 71 * kMin, false},
                   {{{"cluster", "seren"}, {"Hostname", "10.140.1.12"}, {"gpu", "0"}}, kT0 + 400 * kMin,
                    kT0 + 600 * kMin, true}};
  RuleFirings quiet;
  quiet.rule = "Quiet<&>";
  quiet.group = "g";
  for (const RuleFirings& f : {hot, quiet}) {
    report.scores.push_back(ScoreRule(f, report.incidents, report.window));
    report.firings.push_back(f);
  }
  report.total = ScoreSet("all rules", report.scores, report.incidents);
  report.sweep.push_back({report.scores[0]});
  return report;
}

TEST(ReportTest, JsonHasTheDocumentedShape) {
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(Report()));
  ASSERT_EQ(doc["rules"].size(), 2u);
  const nlohmann::json& hot = doc["rules"][0];
  EXPECT_EQ(hot["rule"], "GpuHot");
  EXPECT_EQ(hot["group"], "dcgm-gpu");
  EXPECT_EQ(hot["onsets"], 2);
  EXPECT_EQ(hot["false_alerts"], 1);
  EXPECT_DOUBLE_EQ(hot["precision"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(hot["recall"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(hot["ttd_median_s"].get<double>(), 120.0);
  EXPECT_DOUBLE_EQ(hot["ttd_worst_s"].get<double>(), 120.0);
  EXPECT_DOUBLE_EQ(hot["for_s"].get<double>(), 60.0);
  ASSERT_EQ(hot["incidents"].size(), 2u);
  const nlohmann::json& first = hot["incidents"][0];
  EXPECT_EQ(first["cluster"], "seren");
  EXPECT_EQ(first["kind"], "gpu_overheat");
  EXPECT_EQ(first["subject"], "10.140.1.10-3");
  EXPECT_EQ(first["start"], 1'688'173'200);
  EXPECT_EQ(first["end"], 1'688'173'800);
  EXPECT_EQ(first["caught"], true);
  EXPECT_DOUBLE_EQ(first["ttd_s"].get<double>(), 120.0);
  EXPECT_TRUE(hot["incidents"][1]["ttd_s"].is_null());
  EXPECT_EQ(hot["firing"][1]["open"], true);
  EXPECT_EQ(hot["firing"][1]["detects"], false);
  // A rule that never fired: no precision, no time to detect.
  const nlohmann::json& quiet = doc["rules"][1];
  EXPECT_EQ(quiet["onsets"], 0);
  EXPECT_TRUE(quiet["precision"].is_null());
  EXPECT_DOUBLE_EQ(quiet["recall"].get<double>(), 0.0);
  EXPECT_TRUE(quiet["ttd_median_s"].is_null());
  const nlohmann::json& total = doc["total"];
  EXPECT_EQ(total["onsets"], 2);
  EXPECT_DOUBLE_EQ(total["recall"].get<double>(), 0.5);
  EXPECT_EQ(total["incidents"].size(), 2u);
  EXPECT_EQ(doc["sweep"].size(), 1u);
  EXPECT_EQ(doc["window"]["from"], 1'688'169'600);
}

TEST(ReportTest, TableHasARowPerRuleAndTheTotal) {
  const std::string table = FormatTable(Report());
  EXPECT_NE(table.find("GpuHot"), std::string::npos);
  EXPECT_NE(table.find("Quiet<&>"), std::string::npos);
  EXPECT_NE(table.find("all rules"), std::string::npos);
  EXPECT_NE(table.find("gpu_overheat 1/1, util_drop 0/1"), std::string::npos) << table;
  EXPECT_NE(table.find("for: sweep"), std::string::npos);
}

TEST(ReportTest, TheTableEscapesControlCharactersOfRuleGroupAndKindNames) {
  ScoreReport report = Report();
  // A rule file's names with ESC [ 2 J (clear the screen), an OSC title, a C1 CSI (U+009B) and a newline.
  report.scores[1].rule = "Quiet\x1b[2J\x1b]0;owned\x07";
  report.scores[1].group = "g\xc2\x9b" "31m\nfake row";
  report.scores[1].by_kind["k\x1b[8m"] = {};
  const std::string table = FormatTable(report);
  for (const char c : table) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n') << "control character " << static_cast<int>(u) << " in the table";
  }
  EXPECT_EQ(table.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(table.find("Quiet\\x1b[2J\\x1b]0;owned\\x07"), std::string::npos) << table;
  EXPECT_NE(table.find("g\\u009b31m\\nfake row"), std::string::npos) << table;
  EXPECT_NE(table.find("k\\x1b[8m 0/0"), std::string::npos) << table;
  EXPECT_EQ(table.find("\nfake row"), std::string::npos);
}

TEST(ReportTest, HtmlIsSelfContainedAndShowsEveryRuleAndIncident) {
  const std::string html = FormatHtml(Report());
  for (const char* text : {"GpuHot", "Quiet&lt;&amp;&gt;", "10.140.1.10-3", "util_drop", "cluster kalos",
                           "cluster seren", "missed", "GpuHot (120 s)"}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(html.find("Quiet<&>"), std::string::npos);  // escaped
  // Nothing is fetched when the page is viewed.
  for (const char* external : {"<script", "<link", "src=", "url(", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
}

// The false alert of GpuHot: 10.140.1.12 GPU 0 from 06:40 UTC (14:40 in seren's UTC+8) to the end.
TEST(ReportTest, FalseAlertsAreListedWithTheirLabelsTimesAndDuration) {
  const std::string table = FormatTable(Report());
  EXPECT_NE(table.find("    false alert: {Hostname=\"10.140.1.12\", cluster=\"seren\", gpu=\"0\"} "
                       "2023-07-01 06:40:00+00:00 .. 2023-07-01 10:00:00+00:00 (still firing), 3h20m, "
                       "starts 2023-07-01 14:40:00+08:00"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("    expr: max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) >= 85"), std::string::npos);
  // Two onsets in ten hours, 9 + 200 minutes of firing.
  EXPECT_NE(table.find("    noise: 4.8 onsets/day, 502 alert-minutes/day"), std::string::npos) << table;
  // The caught one is not a false alert.
  EXPECT_EQ(table.find("false alert: {Hostname=\"10.140.1.10\""), std::string::npos);

  const std::string html = FormatHtml(Report());
  EXPECT_NE(html.find("<tr class=\"false-alert\"><td class=\"l k\">{Hostname=&quot;10.140.1.12&quot;, "
                      "cluster=&quot;seren&quot;, gpu=&quot;0&quot;}</td><td class=\"l\">2023-07-01 06:40:00+00:00</td>"
                      "<td class=\"l\">2023-07-01 14:40:00+08:00</td><td class=\"l\">2023-07-01 10:00:00+00:00 "
                      "(still firing)</td><td>3h20m</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<pre class=\"expr\">max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) &gt;= 85</pre>"),
            std::string::npos);
  EXPECT_NE(html.find("rules.yml:7"), std::string::npos);
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(Report()));
  EXPECT_EQ(doc["rules"][0]["expr"], "max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) >= 85");
  EXPECT_NEAR(doc["rules"][0]["onsets_per_day"].get<double>(), 4.8, 1e-9);
  EXPECT_NEAR(doc["rules"][0]["alert_minutes_per_day"].get<double>(), 209 * 2.4, 1e-9);
}

TEST(ReportTest, LinksOpenThePrometheusGraphAndGrafanaExploreAroundEachEvent) {
  ScoreReport report = Report();
  report.links.prometheus = "https://prom.example:9090/prom";
  report.links.grafana = "http://127.0.0.1:3000";
  const std::string html = FormatHtml(report);
  // The false alert, 06:40 to 10:00, seen from 06:10 to 10:30: 260 minutes ending 10:30 UTC.
  const std::string graph =
      "https://prom.example:9090/prom/graph?g0.expr=max%20by%20%28cluster%2C%20Hostname%2C%20gpu%29%20"
      "%28DCGM_FI_DEV_GPU_TEMP%29%20%3E%3D%2085&amp;g0.tab=0&amp;g0.range_input=260m&amp;"
      "g0.end_input=2023-07-01%2010%3A30%3A00";
  EXPECT_NE(html.find("<a class=\"graph\" href=\"" + graph + "\">graph</a>"), std::string::npos) << html;
  // Each incident links to the rules of its kinds (GpuHot speaks for every kind here).
  const std::string incident_graph = "g0.range_input=70m&amp;g0.end_input=2023-07-01%2001%3A40%3A00";
  EXPECT_NE(html.find(incident_graph), std::string::npos);
  const size_t explore = html.find("<a class=\"explore\" href=\"http://127.0.0.1:3000/explore?orgId=1&amp;left=");
  ASSERT_NE(explore, std::string::npos);
  // The Explore state is JSON, URL-encoded: the expression and the range in milliseconds.
  EXPECT_NE(html.find("%22expr%22%3A%22max%20by", explore), std::string::npos);
  EXPECT_NE(html.find("%22from%22%3A%221688171400000%22", explore), std::string::npos);
  // Without --prometheus URL or --grafana, no link.
  EXPECT_EQ(FormatHtml(Report()).find("<a "), std::string::npos);
}

TEST(ReportTest, HostileNamesLabelsAndExpressionsAreEscapedInThePageAndTheLinks) {
  ScoreReport report = Report();
  report.links.prometheus = "http://prom:9090";
  report.links.grafana = "http://grafana:3000";
  report.firings[0].rule = "<script>alert(1)</script>";
  report.firings[0].expr = "up{a=\"\\\"><img src=x onerror=alert(1)>\"} > 0 & x' \" #";
  report.firings[0].intervals[1].labels["evil"] = "\"><script>x</script>";
  report.scores[0].rule = report.firings[0].rule;
  const std::string html = FormatHtml(report);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("onerror=alert"), html.find("onerror=alert(1)&gt;"));  // only as escaped text
  // Inside href the expression is percent-encoded: no quote ends the attribute.
  for (size_t p = html.find("href=\""); p != std::string::npos; p = html.find("href=\"", p + 1)) {
    const size_t end = html.find('"', p + 6);
    const std::string href = html.substr(p + 6, end - p - 6);
    EXPECT_EQ(href.find_first_of("<> '"), std::string::npos) << href;
    EXPECT_TRUE(href.rfind("http://prom:9090/graph?", 0) == 0 || href.rfind("http://grafana:3000/explore?", 0) == 0)
        << href;
  }
}

TEST(ReportTest, ABaselineShowsWhatChangedPerRule) {
  ScoreReport report = Report();
  Baseline baseline;
  baseline.file = "old<score>.json";
  BaselineRule hot;
  hot.rule = "GpuHot";
  hot.onsets = 5;
  hot.false_alerts = 4;
  hot.precision = 0.2;
  hot.recall = 0.5;
  BaselineRule gone;
  gone.rule = "Removed";
  gone.precision = 1.0;
  gone.recall = 0.25;
  baseline.rules = {hot, gone};
  report.baseline = baseline;
  const std::string table = FormatTable(report);
  EXPECT_NE(table.find("since old<score>.json:"), std::string::npos) << table;
  // GpuHot: precision 0.20 -> 0.50, recall unchanged, false alerts 4 -> 1.
  EXPECT_NE(table.find("0.20 -> 0.50 (+0.30)"), std::string::npos) << table;
  EXPECT_NE(table.find("0.50 -> 0.50 (=)"), std::string::npos) << table;
  EXPECT_NE(table.find("4 -> 1 (-3)"), std::string::npos) << table;
  EXPECT_NE(table.find("gone (was precision 1.00, recall 0.25)"), std::string::npos) << table;
  EXPECT_NE(table.find("new: precision -, recall 0.00, 0 false alerts"), std::string::npos) << table;  // Quiet<&>
  const std::string html = FormatHtml(report);
  EXPECT_NE(html.find("<table id=\"baseline\">"), std::string::npos);
  EXPECT_NE(html.find("old&lt;score&gt;.json"), std::string::npos);
  EXPECT_NE(html.find("<td>4 &rarr; 1</td><td>-3</td>"), std::string::npos) << html;
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(report));
  ASSERT_EQ(doc["baseline"]["rules"].size(), 3u);
  EXPECT_EQ(doc["baseline"]["rules"][0]["before"]["false_alerts"], 4);
  EXPECT_EQ(doc["baseline"]["rules"][0]["now"]["false_alerts"], 1);
  EXPECT_EQ(doc["baseline"]["rules"][2]["status"], "gone");
}

TEST(ReportTest, AScorecardIsItsOwnBaseline) {
  const std::string json = FormatJson(Report());
  core::Result<Baseline> baseline = ParseBaseline(json, "old.json");
  ASSERT_TRUE(baseline.ok()) << baseline.status().message();
  ASSERT_EQ(baseline.value().rules.size(), 2u);
  EXPECT_EQ(baseline.value().rules[0].rule, "GpuHot");
  EXPECT_EQ(baseline.value().rules[0].false_alerts, 1);
  EXPECT_DOUBLE_EQ(*baseline.value().rules[0].precision, 0.5);
  EXPECT_FALSE(baseline.value().rules[1].precision.has_value());
  ASSERT_TRUE(baseline.value().total.has_value());
  ScoreReport report = Report();
  report.baseline = baseline.value();
  const std::string table = FormatTable(report);
  EXPECT_NE(table.find("1 -> 1 (=)"), std::string::npos) << table;
}

TEST(BaselineTest, WhatIsNotAScorecardIsRefusedSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {"{\"window\":{}}", "no \"rules\" array"},
      {"{\"rules\":{}}", "\"rules\" is not an array"},
      {"{\"rules\":[{\"onsets\":1}]}", "a rule without \"rule\""},
      {"{\"rules\":[{\"rule\":\"a\",\"precision\":1.5}]}", "\"precision\" of a rule is not a ratio in 0-1 or null"},
      {"{\"rules\":[{\"rule\":\"a\",\"false_alerts\":-1}]}", "\"false_alerts\" of a rule is not a count"},
      {"{\"rules\":[{\"rule\":7}]}", "\"rule\" is not a string"},
      {"{\"rules\":[{\"rule\":\"a\"", "not a JSON object ("},
  };
  for (const auto& [json, why] : cases) {
    core::Result<Baseline> got = ParseBaseline(json, "old.json");
    ASSERT_FALSE(got.ok()) << json;
    EXPECT_EQ(got.status().message().rfind("--baseline: old.json: not a score --json document: " + std::string(why), 0),
              0u)
        << json << ": " << got.status().message();
  }
  EXPECT_EQ(LoadBaseline("/nonexistent/old.json").status().message().rfind("--baseline: /nonexistent/old.json: cannot open", 0),
            0u);
}

}  // namespace
}  // namespace acmetrace::scoring
